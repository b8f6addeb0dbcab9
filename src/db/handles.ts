/**
 * The handles of database.ts: on the pool, on a request's own use of it, and
 * on their transactions, each running named statements (statements.ts).
 * Around every statement: the circuit (circuit.ts: refused at once while the
 * database is out of reach), the bound on work waiting for a connection, the
 * pool's count of its use, the client-kept statement time-out, and the
 * request's scope (scope.ts), which tracks what the request has under way so
 * that a request that gives up cancels it (contract §17). A write sent and
 * never answered (its connection lost) is `OutcomeUnknown`: a COMMIT, or a
 * write outside a transaction.
 */
import type postgres from 'postgres';
import type { Circuit } from './circuit.ts';
import type { Connection, Sql } from './connection.ts';
import { type bound, type Param, TransactionOpenError, type Tx } from './handle.ts';
import { DatabaseUnreachable, DeadlineExceeded, isConnectionFailure, OutcomeUnknown } from './errors.ts';
import type { PoolCounter } from './pool-usage.ts';
import { type DriverQuery, sent, type RequestScope } from './scope.ts';
import { StatementError, type ResultShape, type Statement } from './statements.ts';
import { transaction as reservedTransaction, type TransactionSql } from './transaction.ts';
import { type BatchedRead, type BatchParam, batches } from './batch.ts';

/** The pool, or a transaction taken from it. */
type Queryable = Sql | TransactionSql;

/** Where a handle runs: the pool or a transaction, for whose request (`scope`), the pool's own handle being none. */
interface Place {
  readonly on: Queryable;
  readonly scope: RequestScope | undefined;
}

/**
 * The handles on `sql` and its transactions: `(on, guarded, scope)` makes one on `on`, which refuses its
 * statements while its own transaction is open when `guarded`, and tracks them in `scope`.
 */
export function handles(
  sql: Sql,
  statement: (name: string) => Statement,
  { pool, counted }: PoolCounter,
  cancelAfter: Connection['cancelAfter'],
  circuit: Circuit,
): (on: Queryable, guarded: boolean, scope: RequestScope | undefined) => Tx {
  const maxWaiting = Math.max(MIN_WAITING, pool.size * WAITING_PER_CONNECTION);
  /**
   * Before any work on the pool: refused at once while the database is out of reach, or too much waits. A read
   * gathered for a batch not yet sent counts as a statement waiting (`gathered`), as it did alone.
   */
  const admit = (place: Place, gathered = 0) => {
    if (place.scope?.abandoned === true) throw new DeadlineExceeded(0);
    circuit.check();
    const waiting = pool.waiting + gathered;
    if (place.on === sql && waiting >= maxWaiting)
      throw new DatabaseUnreachable(`${waiting} statements and transactions already wait for a connection`);
  };

  /**
   * Runs statement `name` in `place`, refusing a statement whose header
   * declares a result shape the caller does not take (`-- name: X :one`
   * run with `many()` is a bug in one of the two), and a `:one` that
   * returned more than one row.
   */
  const run = async (
    name: string,
    shape: ResultShape,
    params: readonly Param[],
    place: Place,
    fragments?: Readonly<Record<string, string>>,
  ) => {
    const found = statement(name);
    // A composed statement is a page (:many) or the count beside it (:one).
    if (found.shape !== shape && !(fragments !== undefined && found.shape === 'one'))
      throw new StatementError(`${name} is declared :${found.shape} in ${found.file} but was run as :${shape}`);
    admit(place);
    const { on, scope } = place;
    const text = fragments === undefined ? found.text : fill(found, fragments);
    const query = on.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare: true });
    // Patch 013: its cancel() gives the cancellation's promise (the driver's types say void).
    const driven = query as unknown as DriverQuery;
    // Inside a transaction, a statement sent and never answered is rolled back with it: only its COMMIT matters.
    const write = on === sql && found.writes;
    const untrack = scope?.track(write ? 'write' : 'read', driven);
    let result: Awaited<typeof query>;
    try {
      result = await cancelAfter(on === sql ? counted(query) : query, driven);
    } catch (error) {
      circuit.failed(error);
      throw write && sent(driven) && isConnectionFailure(error) ? new OutcomeUnknown(error) : error;
    } finally {
      untrack?.();
    }
    circuit.reached();
    if (found.shape === 'one' && result.length > 1)
      throw new StatementError(`${name} is declared :one but returned ${result.length} rows`);
    return result;
  };

  /** The reads of one row that requests ask of the pool in one turn, gathered into one statement (batch.ts). */
  const gather = batches({
    single: (name, params, scope) => run(name, 'one', params, { on: sql, scope }),
    batch: (name, params, scope) => run(name, 'many', params, { on: sql, scope }),
  });

  /**
   * A transaction on the pool for `place`: its COMMIT, once the work is done and until it is answered, is the
   * scope's; a COMMIT whose connection is lost may have committed or not (`OutcomeUnknown`).
   */
  const transaction = async <T>(place: Place, inner: (tx: TransactionSql) => Promise<T>): Promise<T> => {
    admit(place);
    let untrack: (() => void) | undefined;
    try {
      const done = await reservedTransaction(place.on as Sql, async (tx) => {
        const value = await inner(tx);
        untrack = place.scope?.track('commit');
        return value;
      });
      circuit.reached();
      return done;
    } catch (error) {
      circuit.failed(error);
      throw untrack !== undefined && isConnectionFailure(error) ? new OutcomeUnknown(error) : error;
    } finally {
      untrack?.();
    }
  };

  /** A handle on `on`; `guarded`: it refuses statements while its own transaction is open. */
  const handleOn = (on: Queryable, guarded: boolean, scope: RequestScope | undefined): Tx => {
    const place: Place = { on, scope };
    let open = false;
    const ready = (name: string) => {
      if (open) throw new TransactionOpenError(name);
    };
    type Inner<T> = (tx: TransactionSql) => Promise<T>;
    /** Runs `work` on a new handle of the transaction `start` opens, refusing this handle's statements meanwhile. */
    const nested = async <T>(
      work: (db: Tx) => Promise<T>,
      start: (inner: Inner<T>) => Promise<unknown>,
    ): Promise<T> => {
      ready('a transaction');
      if (guarded) open = true;
      try {
        return (await start((tx) => work(handleOn(tx, true, scope)))) as T;
      } finally {
        open = false;
      }
    };
    // The pool's own handles are typed `Db` where they are handed out.
    const handle: Omit<Tx, typeof bound> = {
      pool,
      async one<T>(name: string, params: readonly Param[] = []) {
        ready(name);
        return (await run(name, 'one', params, place))[0] as T | undefined;
      },
      async many<T>(name: string, params: readonly Param[] = []) {
        ready(name);
        return [...(await run(name, 'many', params, place))] as T[];
      },
      async batched<T>(read: BatchedRead, params: readonly BatchParam[]) {
        ready(read.single);
        // In a transaction, its own statement; on the pool, gathered with the other requests' of this turn.
        if (on !== sql) return (await run(read.single, 'one', params, place))[0] as T | undefined;
        admit(place, gather.gathered);
        return (await gather(read, params, scope)) as T | undefined;
      },
      async composed<T>(name: string, fragments: Readonly<Record<string, string>>, params: readonly Param[] = []) {
        ready(name);
        return [...(await run(name, 'many', params, place, fragments))] as T[];
      },
      async exec(name: string, params: readonly Param[] = []) {
        ready(name);
        return (await run(name, 'exec', params, place)).count;
      },
      begin<T>(work: (db: Tx) => Promise<T>): Promise<T> {
        // On a transaction, the same one; on the pool, a new one (counted by `sql.reserve`: countPoolUsage()).
        return nested(work, (inner) => ('savepoint' in on ? inner(on) : transaction(place, inner)));
      },
      savepoint<T>(work: (db: Tx) => Promise<T>): Promise<T> {
        if (!('savepoint' in on))
          return Promise.reject(new Error('savepoint() needs a transaction; on the pool, use begin()'));
        return nested(work, (inner) => on.savepoint(inner));
      },
    };
    return handle as Tx;
  };
  return handleOn;
}

/**
 * contract §17: the statements and transactions that may wait for a connection at once, per connection of the
 * pool, and at least (the embedded database has one connection); past that, a new one is refused (503) rather
 * than queued. What a request gave up on leaves the queue at once (scope.ts): this bounds what may wait, not
 * for how long.
 */
export const WAITING_PER_CONNECTION = 32;
export const MIN_WAITING = 256;

const PLACEHOLDER = /\{\{([a-zA-Z]+)\}\}/g;

function fill(statement: Statement, fragments: Readonly<Record<string, string>>): string {
  return statement.text.replace(PLACEHOLDER, (_, key: string) => {
    const fragment = fragments[key];
    if (fragment === undefined) throw new Error(`statement ${statement.name} needs the fragment {{${key}}}`);
    return fragment;
  });
}
