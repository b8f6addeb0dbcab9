/**
 * The service's transactions: its own BEGIN, COMMIT, ROLLBACK and savepoint
 * statements on a connection reserved from the pool (`sql.reserve()`),
 * released when the transaction ends. A statement of the transaction that
 * failed fails it even when the work caught the error, `25P02` ("current
 * transaction is aborted") gives way to the failure that aborted it, and
 * savepoints are named `s0`, `s1`, … and never released (they end with the
 * transaction).
 *
 * Its end is checked (contract §17): a request that gave up never starts
 * one (a connection that comes after is given back unused) and never
 * commits one; a COMMIT or ROLLBACK that fails leaves the connection rolled
 * back or closed, never in the pool inside a transaction. BEGIN reads the
 * transaction's id, so that a COMMIT whose answer was lost can be looked up
 * (`CommitLost`, `txid_status()`).
 */
import type postgres from 'postgres';
import type { Resolution, TransactionMark } from './cancellation.ts';
import type { Sql } from './connection.ts';
import { DeadlineExceeded, isConnectionFailure, withDeadline } from './errors.ts';

type Parameters = postgres.ParameterOrJSON<never>[];

/** What a transaction's statements run on: its reserved connection, and its savepoints. */
export interface TransactionSql {
  readonly unsafe: Sql['unsafe'];
  /** Runs `work` in a savepoint: when it throws, only its work is rolled back (`rollback to`). */
  savepoint<T>(work: (tx: TransactionSql) => Promise<T>): Promise<T>;
}

/** The texts that begin, commit and roll back (sql/queries/transactions.sql), sent as simple queries. */
export interface TransactionTexts {
  /** Begins, and reads the transaction's id (`xid`). */
  readonly begin: string;
  readonly commit: string;
  readonly rollback: string;
}

/** The texts of statements `BeginTransaction`, `CommitTransaction` and `RollbackTransaction` of `statement`. */
export function transactionTexts(statement: (name: string) => { readonly text: string }): TransactionTexts {
  return {
    begin: statement('BeginTransaction').text,
    commit: statement('CommitTransaction').text,
    rollback: statement('RollbackTransaction').text,
  };
}

/** What the transaction is asked, and tells, as it goes: the request it runs for. */
export interface TransactionGuard {
  /** True once its request gave up: nothing is begun, and nothing committed, after that. */
  readonly abandoned: () => boolean;
  /** Moved to `open` once begun, to `committing` as its COMMIT is written. */
  readonly mark: TransactionMark;
}

/** The code of the error of a COMMIT that the server answered with ROLLBACK: nothing was committed. */
export const COMMIT_ROLLED_BACK = 'COMMIT_ROLLED_BACK';

/**
 * A COMMIT was written and its connection lost before the answer: `xid` (when known) says what came of it, and
 * `value` is the work's, for when it committed.
 */
export class CommitLost extends Error {
  override name = 'CommitLost';
  constructor(
    readonly xid: number | undefined,
    readonly value: unknown,
    override readonly cause?: unknown,
  ) {
    super('the connection was lost before the COMMIT was answered', { cause });
  }
}

/**
 * A lost COMMIT's transaction is looked up for at most this long while its request waits, asked again this far
 * apart; then, when that could not tell, for this long again after the request was answered (`later`).
 */
export const RESOLVE_WITHIN_MS = 1_000;
const RESOLVE_INTERVAL_MS = 100;
export const RESOLVE_LATER = { withinMs: 60_000, intervalMs: 1_000 };

/**
 * What came of a COMMIT whose connection was lost, by its transaction's id (`status`: `txid_status()`):
 * asked again while the transaction is still in progress (its backend is ending it) or the database does not
 * answer, for `withinMs`. `unknown` when nothing could tell: no id, no answer in time, an id too old.
 */
export async function resolveLost(
  lost: CommitLost,
  status: (xid: number) => Promise<unknown>,
  withinMs = RESOLVE_WITHIN_MS,
  intervalMs = RESOLVE_INTERVAL_MS,
): Promise<Resolution> {
  if (lost.xid === undefined) return 'unknown';
  const until = performance.now() + withinMs;
  for (let left = withinMs; left > 0; left = until - performance.now()) {
    try {
      const found = await withDeadline(status(lost.xid), left);
      if (found === 'committed') return 'committed';
      if (found === 'aborted') return 'rolled-back';
      if (found !== 'in progress') return 'unknown';
    } catch {
      // Not reached in time: asked again while time is left.
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(intervalMs, Math.max(0, left))));
  }
  return 'unknown';
}

/** A reserved connection, with what patch 013 adds: `terminate()` closes it, and the pool replaces it. */
type Reserved = postgres.ReservedSql & { terminate(): void };

/**
 * Rolls back the transaction of `reserved`. A ROLLBACK that fails on a connection still open (the server
 * refused it) ends the connection: it is never given back inside a transaction. The failure is thrown.
 */
async function rollback(reserved: Reserved, text: string): Promise<void> {
  try {
    await reserved.unsafe(text);
  } catch (error) {
    reserved.terminate();
    throw error;
  }
}

/**
 * What PostgreSQL answers when it rolled a transaction back to end a conflict with another: `40001`
 * (serialization_failure, and a standby's recovery conflict) and `40P01` (deadlock_detected). Nothing of the
 * transaction was done, and run again it may pass.
 */
export const CONFLICT_SQLSTATES: ReadonlySet<string> = new Set(['40001', '40P01']);
/** Times a transaction is tried in all while it keeps meeting conflicts; the last conflict is thrown (503). */
export const CONFLICT_ATTEMPTS = 3;

/**
 * Runs `attempt` (one whole transaction) again after a conflict PostgreSQL ended by rolling it back, as
 * PostgreSQL's documentation asks of clients (13.4, 13.2.3): at most `CONFLICT_ATTEMPTS` in all, each after a
 * random pause of up to 10 ms times the attempts made (so that the two sides of a deadlock do not meet again),
 * and never once its request gave up. Any other failure, and the last conflict, is thrown as it is.
 */
export async function retryingConflicts<T>(attempt: () => Promise<T>, guard: TransactionGuard): Promise<T> {
  for (let attempts = 1; ; attempts++) {
    try {
      return await attempt();
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      if (attempts >= CONFLICT_ATTEMPTS || guard.abandoned() || !CONFLICT_SQLSTATES.has(code as string)) throw error;
      guard.mark.stage = 'waiting';
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * attempts));
    }
  }
}

/** PostgreSQL's "current transaction is aborted, commands ignored until end of transaction block". */
const IN_FAILED_TRANSACTION = '25P02';

/**
 * Runs `work` in a transaction on a connection reserved from `sql`: committed when it resolves, rolled back
 * when it (or any of its statements) fails, or when `guard` says its request gave up. `held` counts it in the
 * pool's use (pool-usage.ts) from its wait for a connection to the connection's release.
 *
 * The transaction commands take no parameter: `unsafe()` sends them as simple queries, never as prepared
 * statements, which a transaction-mode pooler may not know (`DB_PREPARE=off`) and which the driver would
 * retry after a failure (26000), even a COMMIT in an aborted transaction.
 */
export async function transaction<T>(
  sql: Sql,
  work: (tx: TransactionSql) => Promise<T>,
  texts: TransactionTexts,
  guard: TransactionGuard = { abandoned: () => false, mark: { stage: 'waiting' } },
  held: () => () => void = uncounted,
): Promise<T> {
  const done = held();
  const reserved = (await sql.reserve().catch((error: unknown) => {
    done();
    throw error;
  })) as unknown as Reserved;
  try {
    // contract §17: a transaction still waiting for a connection when its request gave up never starts.
    if (guard.abandoned()) throw new DeadlineExceeded(0);
    guard.mark.stage = 'open';
    const [, [begun] = []] = (await reserved.unsafe(texts.begin)) as unknown as [unknown, { xid?: number }[]?];
    const value = await run(reserved, work, texts);
    await commit(reserved, texts, guard, new CommitLost(begun?.xid, value));
    return value;
  } finally {
    // Once its connection closed, the driver keeps it from the pool (patch 003); the pool reconnects it.
    reserved.release();
    done();
  }
}

/** A transaction the pool's use does not count (migrations, tests). */
const uncounted = () => () => {};

/** The work, in the transaction: rolled back and thrown when it fails or one of its statements did. */
async function run<T>(reserved: Reserved, work: (tx: TransactionSql) => Promise<T>, texts: TransactionTexts) {
  let savepoints = 0;
  /** The transaction's work (`name` undefined) or a savepoint's. */
  const scope = async <R>(inner: (tx: TransactionSql) => Promise<R>, name?: string): Promise<R> => {
    let failed: unknown;
    const tx: TransactionSql = {
      unsafe: ((text: string, params: Parameters = [], options?: postgres.UnsafeQueryOptions) => {
        const query = reserved.unsafe(text, params, options);
        query.catch((error: unknown) => {
          failed ??= error;
        });
        return query;
      }) as Sql['unsafe'],
      savepoint: (work) => scope(work, `s${savepoints++}`),
    };
    if (name !== undefined) await reserved.unsafe(`savepoint "${name}"`);
    try {
      const result = await inner(tx);
      if (failed !== undefined) throw failed;
      return result;
    } catch (error) {
      await (name === undefined ? rollback(reserved, texts.rollback) : reserved.unsafe(`rollback to "${name}"`));
      throw (error as { code?: unknown }).code === IN_FAILED_TRANSACTION && failed !== undefined ? failed : error;
    }
  };
  return scope(work);
}

/**
 * Commits, unless the request gave up (then rolls back): the check and the COMMIT's write are one step, so
 * `guard.mark` says exactly whether a COMMIT was written. A COMMIT answered ROLLBACK (an aborted transaction)
 * committed nothing; one that failed on an open connection is rolled back (or the connection closed); one whose
 * connection was lost throws `lost` with the loss as its cause.
 */
async function commit(reserved: Reserved, texts: TransactionTexts, guard: TransactionGuard, lost: CommitLost) {
  if (guard.abandoned()) {
    await rollback(reserved, texts.rollback);
    throw new DeadlineExceeded(0);
  }
  guard.mark.stage = 'committing';
  let tag: string;
  try {
    tag = (await reserved.unsafe(texts.commit)).command;
  } catch (error) {
    if (isConnectionFailure(error)) throw new CommitLost(lost.xid, lost.value, error);
    // A failed COMMIT (a cancel or a deferred constraint) may leave the connection in an aborted transaction.
    await rollback(reserved, texts.rollback).catch(() => {});
    throw error;
  }
  if (tag !== 'COMMIT')
    throw Object.assign(new Error(`${COMMIT_ROLLED_BACK}: COMMIT was answered with ROLLBACK: nothing was committed`), {
      code: COMMIT_ROLLED_BACK,
    });
}
