/**
 * What giving up does (contract §17), in one table. A request gives up when its deadline passes or its client goes
 * away; its `RequestScope` tracks each statement and transaction under way, and `abandon()` applies to each the
 * case of its `Stage` and `Kind`. Afterwards its connection is in step and outside any transaction, or closed: the
 * driver cancels only the statement its backend runs, and writes nothing more on that connection until the server
 * has handled the CancelRequest (patch 013, docs/driver-patches.md).
 */

/** What a piece of work is: a read, a write outside a transaction, or a transaction (or one of its statements). */
export type Kind = 'read' | 'write' | 'transaction';

/**
 * Where it stands: a statement `queued` (not yet written), `pipelined` (written behind another's) or `running`; a
 * transaction `waiting` (for a connection), `open` (no statement under way) or `committing` (its COMMIT written).
 */
export type Stage = 'waiting' | 'queued' | 'pipelined' | 'running' | 'open' | 'committing';

/**
 * What is done: `never-start` (the connection, once it comes, goes back unused), `drop` (taken off the queue,
 * never written), `cancel` (a CancelRequest when the driver can send one safely; else it runs to its end, its
 * answer its own), `roll-back` (nothing more is sent but ROLLBACK), `let-finish` (nothing can be undone).
 */
export type Action = 'never-start' | 'drop' | 'cancel' | 'roll-back' | 'let-finish';

/** Whether the work may have been done all the same: 503 `unavailable` (`not-done`) or `outcome-unknown`. */
export type Outcome = 'not-done' | 'unknown';

export interface Case {
  readonly action: Action;
  readonly outcome: Outcome;
}

const notDone = (action: Action): Case => ({ action, outcome: 'not-done' });
const unknown = (action: Action): Case => ({ action, outcome: 'unknown' });

/**
 * The cases. A transaction's statement is `not-done` whatever becomes of it: no COMMIT follows. A write outside a
 * transaction, once written, may run to its end before the cancel lands: `unknown`. A COMMIT written cannot be
 * called back: `unknown`, until its transaction's id tells (transaction.ts).
 */
export const ON_ABANDON: { readonly [S in Stage]: Partial<Record<Kind, Case>> } = {
  waiting: { transaction: notDone('never-start') },
  queued: { read: notDone('drop'), write: notDone('drop'), transaction: notDone('drop') },
  pipelined: { read: notDone('cancel'), write: unknown('cancel'), transaction: notDone('cancel') },
  running: { read: notDone('cancel'), write: unknown('cancel'), transaction: notDone('cancel') },
  open: { transaction: notDone('roll-back') },
  committing: { transaction: unknown('let-finish') },
};

/** The case of `kind` at `stage`; a pairing the table does not have is a bug in the caller. */
export function caseOf(stage: Stage, kind: Kind): Case {
  const found = ON_ABANDON[stage][kind];
  if (found === undefined) throw new Error(`no case for a ${kind} at stage ${stage}`);
  return found;
}

/** A statement as the driver has it: `state` is set once written; `active` once its backend runs it. */
export interface DriverQuery {
  /** Patch 013: 'dropped', 'cancelled' or 'left'. */
  cancel(): Promise<unknown>;
  readonly state?: unknown;
  readonly active?: boolean;
}

/** Where a statement stands, as the driver has it. */
export function stageOf(query: DriverQuery): Stage {
  if (query.state === null || query.state === undefined) return 'queued';
  return query.active === true ? 'running' : 'pipelined';
}

/** Whether the driver wrote `query` to a connection. */
export function written(query: DriverQuery): boolean {
  return stageOf(query) !== 'queued';
}

/** A request's transaction; its code moves `stage`. */
export interface TransactionMark {
  stage: 'waiting' | 'open' | 'committing';
}

type Pending = { readonly query: DriverQuery; readonly kind: Kind } | { readonly mark: TransactionMark };

/** What became of a COMMIT written for a request that had given up meanwhile, once known. */
export type Resolution = 'committed' | 'rolled-back' | 'unknown';

export class RequestScope {
  // Made on first use: most requests never reach the database.
  #pending: Set<Pending> | undefined;
  #abandoned = false;
  #outcome: Outcome | undefined;

  /** Told what came of a COMMIT the request had under way when it gave up (answered `unknown`). */
  resolved: ((resolution: Resolution) => void) | undefined;

  /** True once the request gave up: its handles send nothing more, and its transactions never commit. */
  get abandoned(): boolean {
    return this.#abandoned;
  }

  /** What abandoning left (`undefined` before): `unknown` when a case of it was. */
  get outcome(): Outcome | undefined {
    return this.#outcome;
  }

  /** Tracks `query` until the function returned is called. */
  track(kind: Kind, query: DriverQuery): () => void {
    return this.#add({ query, kind });
  }

  /** Tracks a transaction from its wait for a connection to its end. */
  transaction(): { readonly mark: TransactionMark; readonly untrack: () => void } {
    const mark: TransactionMark = { stage: 'waiting' };
    return { mark, untrack: this.#add({ mark }) };
  }

  #add(pending: Pending): () => void {
    this.#pending ??= new Set();
    const all = this.#pending;
    all.add(pending);
    return () => {
      all.delete(pending);
    };
  }

  /** Gives up on everything tracked; `unknown` when any case's outcome is. */
  abandon(): Outcome {
    if (this.#outcome !== undefined) return this.#outcome;
    this.#abandoned = true;
    let outcome: Outcome = 'not-done';
    for (const pending of this.#pending ?? []) {
      const found =
        'mark' in pending ? caseOf(pending.mark.stage, 'transaction') : caseOf(stageOf(pending.query), pending.kind);
      if (found.outcome === 'unknown') outcome = 'unknown';
      // The cancel's own failure closes its connection (patch 013); the statement's answer says what came of it.
      if ('query' in pending && (found.action === 'drop' || found.action === 'cancel'))
        pending.query.cancel().catch(() => {});
      // never-start, roll-back, let-finish: the transaction's own code acts at its next step (transaction.ts).
    }
    this.#pending?.clear();
    this.#outcome = outcome;
    return outcome;
  }
}
