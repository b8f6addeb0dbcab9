/** The one way the service reaches PostgreSQL: the `Db` handle on a pool, with statements from `sql/queries/`. */
import { join } from 'node:path';
import { SQL_DIR } from './sql-files.ts';
import { connect, reconnectDelaySeconds, type DatabaseOptions, type Sql } from './connection.ts';
import { countPoolUsage } from './pool-usage.ts';
import { loadStatements, StatementError, type Statement } from './statements.ts';
import { createCircuit } from './circuit.ts';
import { handles } from './handles.ts';
import type { RequestScope } from './cancellation.ts';
import type { Db } from './handle.ts';
import { transaction, transactionTexts, type TransactionSql } from './transaction.ts';

// The handle's types are handle.ts's; most of the service takes them from here, with the pool.
export type { Db, NamesOf, Param, RowOf, StatementName, Tx } from './handle.ts';
export type { BatchedRead, BatchParam } from './batch.ts';
export { TransactionOpenError } from './handle.ts';

export interface Database extends Db {
  /** The driver's pool, for what is not a named statement: migrations, the demo seed, tests. */
  readonly sql: Sql;
  readonly kind: 'embedded' | 'postgres';
  /** True when this start created the embedded database (never for a real server). */
  readonly created: boolean;
  /**
   * A handle for one unit of work (a request), which refuses statements while its own transaction is open (the
   * shared database cannot). With `scope`, its statements are tracked there, for a request that gives up.
   */
  handle(scope?: RequestScope): Db;
  /**
   * Where the statements of health checks and metrics go (`overload: 'exempt'` routes): on a real server a
   * connection of their own, never queued behind the requests' work; on the embedded database, the pool.
   */
  readonly operations: { handle(scope?: RequestScope): Db };
  /** The text of a statement, for the few places that compose whitelisted fragments into it. */
  statement(name: string): Statement;
  /** A transaction of the driver's own statements (`tx.unsafe`), outside any request: migrations, tests. */
  transaction<T>(work: (tx: TransactionSql) => Promise<T>): Promise<T>;
  /** Ends the pool, letting queries finish for up to `timeoutSeconds`. */
  close(timeoutSeconds?: number): Promise<void>;
}

export const QUERIES_DIR = join(SQL_DIR, 'queries');

/** Opens the database `options` describe (the embedded one when there is no server). */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  const { sql, operations, embedded, cancelAfter } = await connect(options);
  const statements = loadStatements(QUERIES_DIR);
  const statement = (name: string): Statement => {
    const found = statements.get(name);
    if (found === undefined) throw new StatementError(`no SQL statement named ${name} in sql/queries/`);
    return found;
  };
  const size = embedded ? 1 : options.poolMax;
  const ping = statement('Ping').text;
  const circuit = createCircuit({
    // Straight on the pool, past the circuit it probes for.
    probe: () => sql.unsafe(ping),
    // Paced here: the pool's connections take turns, so the driver's backoff (per connection) does not pace them.
    delayMs: (attempt) => reconnectDelaySeconds(attempt) * 1000,
    ...(options.onCircuit === undefined ? {} : options.onCircuit),
  });
  const usage = countPoolUsage(size, circuit);
  const handleOn = handles(sql, statement, usage, cancelAfter, circuit, options.readOnly === true);
  // The pool's own handle, its methods bound to it (savepoint() is a transaction's only).
  const onPool: Db = handleOn(sql, false, undefined);
  const handle = (scope?: RequestScope): Db => handleOn(sql, true, scope);
  // Its own count of what waits for it, so that the requests' never refuse its statements; it shows (GET /metrics)
  // the requests' pool, and it is not in those figures. The circuit is the database's.
  const onOperations =
    operations === undefined
      ? undefined
      : handles(
          operations,
          statement,
          countPoolUsage(1, circuit),
          cancelAfter,
          circuit,
          options.readOnly === true,
          usage.pool,
        );
  return {
    one: onPool.one.bind(onPool),
    opt: onPool.opt.bind(onPool),
    batched: onPool.batched.bind(onPool),
    many: onPool.many.bind(onPool),
    exec: onPool.exec.bind(onPool),
    composed: onPool.composed.bind(onPool),
    begin: onPool.begin.bind(onPool),
    pool: onPool.pool,
    sql,
    kind: embedded ? 'embedded' : 'postgres',
    created: embedded?.created ?? false,
    statement,
    transaction: (work) => transaction(sql, work, transactionTexts(statement), undefined, usage.held),
    handle,
    operations: {
      handle: onOperations === undefined ? handle : (scope) => onOperations(operations as Sql, true, scope),
    },
    async close(timeoutSeconds = 5) {
      circuit.stop();
      await Promise.all([sql.end({ timeout: timeoutSeconds }), operations?.end({ timeout: timeoutSeconds })]);
      await embedded?.close();
    },
  };
}
