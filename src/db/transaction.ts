/**
 * The service's transactions: its own `begin`, `commit`, `rollback` and
 * savepoint statements on a connection reserved from the pool
 * (`sql.reserve()`), released when the transaction ends. The driver's
 * `sql.begin()` needed four patches to be safe here (docs/driver-patches.md);
 * this keeps its rules otherwise: a statement of the transaction that failed
 * fails it even when the work caught the error, `25P02` ("current
 * transaction is aborted") gives way to the failure that aborted it, and
 * savepoints are named `s0`, `s1`, … and never released (they end with the
 * transaction).
 */
import type postgres from 'postgres';
import type { Sql } from './connection.ts';

type Parameters = postgres.ParameterOrJSON<never>[];

/** What a transaction's statements run on: its reserved connection, and its savepoints. */
export interface TransactionSql {
  readonly unsafe: Sql['unsafe'];
  /** Runs `work` in a savepoint: when it throws, only its work is rolled back (`rollback to`). */
  savepoint<T>(work: (tx: TransactionSql) => Promise<T>): Promise<T>;
}

/** The code of the error of a COMMIT that the server answered with ROLLBACK: nothing was committed. */
export const COMMIT_ROLLED_BACK = 'COMMIT_ROLLED_BACK';

/** What `rollback()` sends to end a connection it could not roll back: the server closes it. */
export const TERMINATE_OWN_BACKEND = 'SELECT pg_terminate_backend(pg_backend_pid())';

/**
 * Rolls back the transaction of `reserved`, and makes sure its connection never goes back to the pool inside a
 * transaction: a ROLLBACK that failed on a connection still open (a cancel that landed on it) is sent once more,
 * and when that fails too, the server is asked to end the connection, which the pool then replaces (a closed
 * reservation is never reused: patch 004). The first failure is thrown, as the driver's `begin()` did.
 */
async function rollback(reserved: postgres.ReservedSql): Promise<void> {
  try {
    await reserved.unsafe('rollback');
  } catch (error) {
    try {
      await reserved.unsafe('rollback');
    } catch {
      await reserved.unsafe(TERMINATE_OWN_BACKEND).catch(() => {});
    }
    throw error;
  }
}

/** PostgreSQL's "current transaction is aborted, commands ignored until end of transaction block". */
const IN_FAILED_TRANSACTION = '25P02';

/**
 * Runs `work` in a transaction on a connection reserved from `sql`: committed when it resolves, rolled back
 * when it (or any of its statements) fails.
 *
 * The transaction commands take no parameter: `unsafe()` sends them as simple queries, never as prepared
 * statements, which a transaction-mode pooler may not know (`DB_PREPARE=off`) and which the driver would
 * retry after a failure (26000), even a COMMIT in an aborted transaction.
 */
export async function transaction<T>(sql: Sql, work: (tx: TransactionSql) => Promise<T>): Promise<T> {
  const reserved = await sql.reserve();
  let savepoints = 0;
  /** The transaction's work (`name` undefined) or a savepoint's, as the driver's `scope()` runs them. */
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
    let result: R;
    try {
      result = await inner(tx);
      if (failed !== undefined) throw failed;
    } catch (error) {
      await (name === undefined ? rollback(reserved) : reserved.unsafe(`rollback to "${name}"`));
      throw (error as { code?: unknown }).code === IN_FAILED_TRANSACTION && failed !== undefined ? failed : error;
    }
    if (name === undefined) {
      // An aborted transaction (its error caught somewhere) ends with the command tag ROLLBACK, and no error.
      if ((await reserved.unsafe('commit')).command !== 'COMMIT')
        throw Object.assign(
          new Error(`${COMMIT_ROLLED_BACK}: COMMIT was answered with ROLLBACK: nothing was committed`),
          {
            code: COMMIT_ROLLED_BACK,
          },
        );
    }
    return result;
  };
  try {
    await reserved.unsafe('begin');
    return await scope(work);
  } finally {
    // Once its connection closed, the driver keeps it from the pool (patch 004); the pool reconnects it.
    reserved.release();
  }
}
