/**
 * The service's transactions: its own BEGIN, COMMIT, ROLLBACK and savepoints on a connection reserved from the
 * pool. A failed statement fails the transaction even when the work caught the error, and savepoints are never
 * released (they end with the transaction). A COMMIT or ROLLBACK that fails leaves the connection rolled back or
 * closed, never in the pool inside a transaction. BEGIN reads the transaction's id, so that a COMMIT whose answer
 * was lost can be looked up (`txid_status()`).
 */
import type postgres from 'postgres';
import type { Resolution, TransactionMark } from './cancellation.ts';
import type { Sql } from './connection.ts';
import { DeadlineExceeded, isConnectionFailure, withDeadline } from './errors.ts';

type Parameters = postgres.ParameterOrJSON<never>[];

/** What a transaction's statements run on: its reserved connection, and its savepoints. */
export interface TransactionSql {
  readonly unsafe: Sql['unsafe'];
  savepoint<T>(work: (tx: TransactionSql) => Promise<T>): Promise<T>;
}

/** The texts that begin (and read the `xid`), commit and roll back: sql/queries/transactions.sql. */
export interface TransactionTexts {
  readonly begin: string;
  readonly commit: string;
  readonly rollback: string;
}

/** The transaction texts among `statement`'s. */
export function transactionTexts(statement: (name: string) => { readonly text: string }): TransactionTexts {
  return {
    begin: statement('BeginTransaction').text,
    commit: statement('CommitTransaction').text,
    rollback: statement('RollbackTransaction').text,
  };
}

/** What the transaction is asked, and tells, about the request it runs for. */
export interface TransactionGuard {
  /** Once true, nothing is begun or committed. */
  readonly abandoned: () => boolean;
  readonly mark: TransactionMark;
}

/** The error code of a COMMIT the server answered with ROLLBACK: nothing was committed. */
export const COMMIT_ROLLED_BACK = 'COMMIT_ROLLED_BACK';

/** A COMMIT's connection was lost before its answer: `xid` may tell what came of it; `value` is the work's. */
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

/** How long, and how often, a lost COMMIT is looked up while its request waits, then after it was answered. */
export const RESOLVE_WITHIN_MS = 1_000;
const RESOLVE_INTERVAL_MS = 100;
export const RESOLVE_LATER = { withinMs: 60_000, intervalMs: 1_000 };

/**
 * What came of a lost COMMIT, by `txid_status()` of its transaction: asked again for `withinMs` while it is still
 * in progress (its backend is ending it) or the database does not answer; `unknown` when nothing could tell.
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

/** Rolls back; a ROLLBACK that fails closes the connection, which is never given back inside a transaction. */
async function rollback(reserved: Reserved, text: string): Promise<void> {
  try {
    await reserved.unsafe(text);
  } catch (error) {
    reserved.terminate();
    throw error;
  }
}

/**
 * A transaction rolled back to end a conflict: `40001` (serialization_failure, and a standby's recovery conflict)
 * and `40P01` (deadlock_detected). Nothing of it was done, and run again it may pass.
 */
export const CONFLICT_SQLSTATES: ReadonlySet<string> = new Set(['40001', '40P01']);
/** Times a transaction is tried in all while it keeps meeting conflicts; the last conflict is thrown (503). */
export const CONFLICT_ATTEMPTS = 3;

/**
 * Runs `attempt` (a whole transaction) again after a conflict, as PostgreSQL's documentation asks (13.4, 13.2.3),
 * after a random pause so that the two sides of a deadlock do not meet again; never once its request gave up.
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

/** "current transaction is aborted": gives way to the failure that aborted it. */
const IN_FAILED_TRANSACTION = '25P02';

/**
 * Runs `work` in a transaction on a connection reserved from `sql`, counted by `held` in the pool's use. Its
 * commands take no parameter, so they go as simple queries, never as prepared statements, which a pooler may not
 * know and which the driver would retry after a failure (26000), even a COMMIT in an aborted transaction.
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

const uncounted = () => () => {};

/** Runs `work`: rolled back and thrown when it, or one of its statements, failed. */
async function run<T>(reserved: Reserved, work: (tx: TransactionSql) => Promise<T>, texts: TransactionTexts) {
  let savepoints = 0;
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

/** Commits unless the request gave up: check and write are one step, so `guard.mark` says if a COMMIT was written. */
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
