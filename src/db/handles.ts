/**
 * The handles of database.ts, on the pool, on a request's use of it, and on their transactions. Around every
 * statement: the circuit, the bound on work waiting for a connection, the pool's count of its use, the client-kept
 * statement time-out, and the request's scope (cancellation.ts).
 */
import type postgres from 'postgres';
import type { Circuit } from './circuit.ts';
import type { Connection, Sql } from './connection.ts';
import type { Param, RowOf, Tx } from './handle.ts';
import { DatabaseUnreachable, DeadlineExceeded, isConnectionFailure, OutcomeUnknown } from './errors.ts';
import type { PoolCounter, PoolUsage } from './pool-usage.ts';
import { type DriverQuery, type RequestScope, type Resolution, written } from './cancellation.ts';
import { checkRows, checkShape, fill, type ResultShape, type Statement, StatementError } from './statements.ts';
import {
  COMMIT_ROLLED_BACK,
  CommitLost,
  RESOLVE_LATER,
  resolveLost,
  retryingConflicts,
  transaction as reservedTransaction,
  transactionTexts,
  type TransactionGuard,
  type TransactionSql,
} from './transaction.ts';
import { batches } from './batch.ts';
import { Handle, type Place, type Queryable, type Runner } from './request-handle.ts';

/**
 * Makes the handles on `sql` and its transactions. `reported`: the use their `pool` shows (GET /metrics), when it is
 * another pool's (the operations connection shows the requests' pool); `sql`'s own counts bound its waiting work.
 */
export function handles(
  sql: Sql,
  statement: (name: string) => Statement,
  { pool, counted, held }: PoolCounter,
  cancelAfter: Connection['cancelAfter'],
  circuit: Circuit,
  readOnly = false,
  reported: PoolUsage = pool,
): (on: Queryable, guarded: boolean, scope: RequestScope | undefined) => Tx {
  const maxWaiting = Math.max(MIN_WAITING, pool.size * WAITING_PER_CONNECTION);
  const texts = transactionTexts(statement);
  /** Refuses work at once while the database is out of reach or too much waits (gathered reads included). */
  const admit = (place: Place, gathered = 0) => {
    if (place.scope?.abandoned === true) throw new DeadlineExceeded(0);
    circuit.check();
    const waiting = pool.waiting + gathered;
    if (place.on === sql && waiting >= maxWaiting)
      throw new DatabaseUnreachable(`${waiting} statements and transactions already wait for a connection`);
  };

  /** Runs statement `name` in `place`, checked against its header (statements.ts). */
  const run = async (
    name: string,
    shape: ResultShape,
    params: readonly Param[],
    place: Place,
    fragments?: Readonly<Record<string, string>>,
  ) => {
    const found = statement(name);
    checkShape(found, shape, fragments !== undefined);
    if (readOnly && found.writes) throw new StatementError(`${name} writes, and this pool is a read replica's`);
    admit(place);
    const { on, scope } = place;
    const text = fragments === undefined ? found.text : fill(found, fragments);
    const query = on.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare: true });
    // Patch 013: its cancel() gives the cancellation's promise (the driver's types say void).
    const driven = query as unknown as DriverQuery;
    // Inside a transaction, a statement sent and never answered is rolled back with it: only its COMMIT matters.
    const kind = on !== sql ? 'transaction' : found.writes ? 'write' : 'read';
    const untrack = scope?.track(kind, driven);
    let result: Awaited<typeof query>;
    try {
      result = await cancelAfter(on === sql ? counted(query) : query, driven);
    } catch (error) {
      circuit.failed(error);
      throw kind === 'write' && written(driven) && isConnectionFailure(error) ? new OutcomeUnknown(error) : error;
    } finally {
      untrack?.();
    }
    circuit.reached();
    checkRows(found, shape, fragments !== undefined, result.length);
    return result;
  };

  const gather = batches({
    single: (name, params, scope) => run(name, 'opt', params, { on: sql, scope }),
    batch: (name, params, scope) => run(name, 'many', params, { on: sql, scope }),
  });

  const statusOf = async (xid: number) => {
    const [row] = await run('TransactionStatus', 'one', [xid], { on: sql, scope: undefined });
    return (row as unknown as RowOf<'TransactionStatus'>).status;
  };

  /**
   * A transaction on the pool. A COMMIT whose connection was lost is looked up: committed, the work's value; rolled
   * back, the loss (503, not done); else `OutcomeUnknown`. A request that gave up meanwhile is told what came of it.
   */
  const transaction = async <T>(place: Place, inner: (tx: TransactionSql) => Promise<T>): Promise<T> => {
    admit(place);
    const { scope } = place;
    const tracked = scope?.transaction();
    const guard: TransactionGuard = {
      abandoned: () => scope?.abandoned === true,
      mark: tracked?.mark ?? { stage: 'waiting' },
    };
    const told = (resolution: Resolution) => {
      if (scope?.abandoned === true && guard.mark.stage === 'committing') scope.resolved?.(resolution);
    };
    try {
      const begun = () => reservedTransaction(place.on as Sql, inner, texts, guard, held);
      const value = await retryingConflicts(begun, guard);
      circuit.reached();
      told('committed');
      return value;
    } catch (error) {
      circuit.failed(error instanceof CommitLost ? error.cause : error);
      if (guard.mark.stage !== 'committing') throw error;
      if (!(error instanceof CommitLost)) {
        told(
          (error as { code?: unknown }).code === COMMIT_ROLLED_BACK || !isConnectionFailure(error)
            ? 'rolled-back'
            : 'unknown',
        );
        throw error;
      }
      const resolution = await resolveLost(error, statusOf);
      if (resolution !== 'unknown') told(resolution);
      if (resolution === 'committed') return error.value as T;
      if (resolution === 'rolled-back') throw error.cause;
      // Not known while the request waits: looked up again after it was answered, and told then.
      const later =
        error.xid === undefined
          ? undefined
          : resolveLost(error, statusOf, RESOLVE_LATER.withinMs, RESOLVE_LATER.intervalMs);
      void later?.then(told);
      throw new OutcomeUnknown(error.cause, later);
    } finally {
      tracked?.untrack();
    }
  };

  const runner: Runner = { sql, pool: reported, run, admit, gather, transaction };
  return (on, guarded, scope) => new Handle(runner, on, guarded, scope) as unknown as Tx;
}

/**
 * The statements and transactions that may wait for a connection, per connection and at least (the embedded
 * database has one); past that, a new one is refused (503) rather than queued. This bounds what waits, not how
 * long: what a request gave up on leaves the queue at once.
 */
export const WAITING_PER_CONNECTION = 32;
export const MIN_WAITING = 256;
