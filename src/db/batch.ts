/**
 * One statement for the reads that arrive together: reads of the same pair of statements asked of one pool in one
 * turn of the event loop go out as one statement at the end of the turn (`setImmediate`: after every request that
 * turn's I/O brought), or as soon as `MAX_BATCH` have gathered.
 *
 * The batch statement takes the single one's parameters as arrays of every member's value, and each of its rows
 * carries `n`, the 1-based place of its member (`unnest(…) WITH ORDINALITY`). Each member passes its own
 * parameters, so whatever limits what a request may see (its owner) applies to its own row. A failure that says
 * the database is out of reach is every member's; any other is not known to be, so each member runs its read alone.
 */
import { DeadlineExceeded, isDatabaseUnavailable } from './errors.ts';
import { RequestScope } from './cancellation.ts';

/** A member's parameter: an integer (a key) or NULL, written into the batch's arrays as they are. */
export type BatchParam = number | null;

/** The two statements of one read: for one row, and for the rows of many members (docs/architecture.md). */
export interface BatchedRead<Single extends string = string> {
  readonly single: Single;
  readonly batch: string;
  /**
   * From this many members a batch goes out as two halves, which two backends work on at once: for rows dear to
   * build (an order's JSON); a cheap read is faster in one statement.
   */
  readonly halvesFrom?: number;
}

/** The most members one batch takes: the next one starts another batch. */
export const MAX_BATCH = 64;

/**
 * The fewest places a batch's arrays have, padded with NULL keys (which find no row). PostgreSQL re-plans a prepared
 * statement while its custom plans look cheaper than the generic one, which assumes 10 array elements: unpadded,
 * every batch of 2 to 9 was planned anew. From 16, the generic plan wins and is kept after the first five runs.
 */
export const LEAST_WIDTH = 16;

type Row = Record<string, unknown>;

/** How a batch runs its statements on the pool. */
export interface BatchRunner {
  single(name: string, params: readonly BatchParam[], scope: RequestScope | undefined): Promise<readonly Row[]>;
  batch(name: string, params: readonly string[], scope: RequestScope): Promise<readonly Row[]>;
}

interface Member {
  readonly params: readonly BatchParam[];
  readonly scope: RequestScope | undefined;
  readonly resolve: (row: Row | undefined) => void;
  readonly reject: (error: unknown) => void;
  done: boolean;
  /** No longer counted as gathered. */
  sent: boolean;
  untrack: (() => void) | undefined;
}

class Batch {
  readonly members: Member[] = [];
  /** The batch statement's own scope: abandoned when its last member leaves. */
  readonly scope = new RequestScope();
  sent = false;
  live = 0;
}

/** Gathers a read; `gathered` counts the members waiting for their batch to go out. */
export type Gatherer = ((
  read: BatchedRead,
  params: readonly BatchParam[],
  scope: RequestScope | undefined,
) => Promise<Row | undefined>) & { readonly gathered: number };

/** The gatherer of one pool. */
export function batches(run: BatchRunner, max = MAX_BATCH, least = LEAST_WIDTH): Gatherer {
  const open = new Map<string, Batch>();
  let gathered = 0;

  const settle = (member: Member, outcome: { row?: Row | undefined; error?: unknown }) => {
    if (member.done) return;
    member.done = true;
    if (!member.sent) gathered -= 1;
    member.untrack?.();
    if ('error' in outcome) member.reject(outcome.error);
    else member.resolve(outcome.row);
  };

  const alone = (read: BatchedRead, member: Member) => {
    run.single(read.single, member.params, member.scope).then(
      (rows) => settle(member, { row: rows[0] }),
      (error: unknown) => settle(member, { error }),
    );
  };

  const send = (read: BatchedRead, batch: Batch) => {
    if (open.get(read.batch) === batch) open.delete(read.batch);
    batch.sent = true;
    const members = batch.members.filter((m) => !m.done);
    for (const member of members) member.sent = true;
    gathered -= members.length;
    if (members.length === 0) return;
    if (members.length === 1) return alone(read, members[0] as Member);
    if (read.halvesFrom === undefined || members.length < read.halvesFrom) return statement(read, members, batch);
    const half = members.length >> 1;
    statement(read, members.slice(0, half), batch);
    statement(read, members.slice(half), batch);
  };

  /** One batch statement for `members` (a whole batch or a half). */
  const statement = (read: BatchedRead, members: readonly Member[], batch: Batch) => {
    run.batch(read.batch, columns(members, least), batch.scope).then(
      (rows) => {
        for (const row of rows) {
          const member = members[Number(row.n) - 1];
          if (member !== undefined) settle(member, { row });
        }
        for (const member of members) settle(member, {});
      },
      (error: unknown) => {
        if (isDatabaseUnavailable(error)) for (const member of members) settle(member, { error });
        else for (const member of members) if (!member.done) alone(read, member);
      },
    );
  };

  const gather = (read: BatchedRead, params: readonly BatchParam[], scope: RequestScope | undefined) => {
    // A missing parameter is refused, never sent as NULL: a NULL owner is an admin's, who sees every row.
    const wrong = params.findIndex((p) => p === undefined || (p !== null && !Number.isSafeInteger(p)));
    if (wrong !== -1) {
      return Promise.reject(new TypeError(`a batched read takes integers and NULL, not ${String(params[wrong])}`));
    }
    const width = open.get(read.batch)?.members[0]?.params.length;
    if (width !== undefined && params.length !== width) {
      return Promise.reject(new TypeError(`${read.batch} takes ${width} parameters, not ${params.length}`));
    }
    return new Promise<Row | undefined>((resolve, reject) => {
      let batch = open.get(read.batch);
      if (batch === undefined) {
        const made = new Batch();
        open.set(read.batch, made);
        setImmediate(() => {
          if (!made.sent) send(read, made);
        });
        batch = made;
      }
      const member: Member = { params, scope, resolve, reject, done: false, sent: false, untrack: undefined };
      gathered += 1;
      const joined = batch;
      joined.members.push(member);
      joined.live += 1;
      // Giving up leaves the batch at once; the statement is cancelled once no member is left.
      member.untrack = scope?.track('read', {
        state: null,
        cancel: () => {
          if (!member.done) {
            settle(member, { error: new DeadlineExceeded(0) });
            joined.live -= 1;
            if (joined.live === 0 && joined.sent) joined.scope.abandon();
          }
          return Promise.resolve();
        },
      });
      if (joined.members.length >= max) send(read, joined);
    });
  };
  return Object.defineProperty(gather, 'gathered', { get: () => gathered }) as Gatherer;
}

/** Per column, an array literal of every member's value, in order, padded with NULL to `least` places. */
function columns(members: readonly Member[], least: number): string[] {
  const width = members[0]?.params.length ?? 0;
  const padding = ',NULL'.repeat(Math.max(0, least - members.length));
  const out: string[] = [];
  for (let i = 0; i < width; i += 1) {
    out.push(`{${members.map((m) => literal(m.params[i])).join(',')}${padding}}`);
  }
  return out;
}

/** An array literal's element: gather() took only integers and NULL. */
const literal = (value: BatchParam | undefined): string =>
  value === null || value === undefined ? 'NULL' : String(value);
