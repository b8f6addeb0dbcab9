/**
 * The one way the service reaches PostgreSQL: the `Db` handle on a pool
 * (connection.ts opens it: on `DATABASE_URL`, or on the embedded database's
 * socket when it is unset or `memory:`) and on its transactions. Statements
 * come by name from `sql/queries/` (see statements.ts).
 */
import type postgres from 'postgres';
import { join } from 'node:path';
import { SQL_DIR } from './sql-files.ts';
import { connect, type Connection, type DatabaseOptions, type Sql } from './connection.ts';
import { countPoolUsage, type PoolCounter, type PoolUsage } from './pool-usage.ts';
import { loadStatements, StatementError, type ResultShape, type Statement } from './statements.ts';

/** The pool, or a transaction taken from it. */
type Queryable = Sql | postgres.TransactionSql<Record<string, never>>;
export type Param = string | number | boolean | null | Date | Uint8Array | readonly string[];

/**
 * A handle on the database: the pool, or one transaction (or savepoint) of
 * it. Statements run on the handle they are called on, and `begin()` hands
 * its callback a handle bound to the new transaction, as the `postgres`
 * driver's own `sql.begin((sql) => …)` does. There is no transaction
 * argument to forget: while a handle's transaction is open, the handle
 * itself refuses statements (`TransactionOpenError`), so work that reaches
 * for the outer handle fails at once rather than running outside the
 * transaction (and, on the embedded database's single connection, waiting
 * for it forever).
 */
export interface Db {
  /** Runs a `:one` statement; `undefined` when it returned no row, an error when it returned more. */
  one<T>(name: string, params?: readonly Param[]): Promise<T | undefined>;
  /** Runs a `:many` statement. */
  many<T>(name: string, params?: readonly Param[]): Promise<T[]>;
  /** Runs an `:exec` statement and returns the number of rows it touched. */
  exec(name: string, params?: readonly Param[]): Promise<number>;
  /**
   * Runs a `:many` statement, or a `:one` (at most one row), whose `{{name}}` placeholders are filled with
   * `fragments`. Fragments must come from fixed whitelists (sort orders,
   * optional filters), never from a request: values travel in `params`.
   */
  composed<T>(name: string, fragments: Readonly<Record<string, string>>, params?: readonly Param[]): Promise<T[]>;
  /**
   * Runs `work` in a transaction and hands it the handle bound to it: on
   * the pool, a new transaction, which commits when `work` resolves and
   * rolls back when it throws; on a transaction's handle, that same
   * transaction (a write that may run alone or within a larger one, such
   * as an idempotent request's, commits with the larger one).
   */
  begin<T>(work: (db: Tx) => Promise<T>): Promise<T>;
  /** What the pool is doing now (GET /metrics). */
  readonly pool: PoolUsage;
}

/**
 * A handle bound to a transaction (or a savepoint): what a write that must commit with others takes, such as an event.
 */
/** Only in types: what makes a `Tx` more than a `Db`, so that the pool's handle is never taken for one. */
declare const bound: unique symbol;

export interface Tx extends Db {
  readonly [bound]: true;
  /**
   * Runs `work` in a savepoint of this transaction: when it throws, only
   * its own work is rolled back, and the transaction goes on.
   */
  savepoint<T>(work: (db: Tx) => Promise<T>): Promise<T>;
}

export interface Database extends Db {
  /** The driver's pool, for what is not a named statement: migrations, the demo seed, tests. */
  readonly sql: Sql;
  readonly kind: 'embedded' | 'postgres';
  /** True when this start created the embedded database (never for a real server). */
  readonly created: boolean;
  /**
   * A handle of its own on the pool for one unit of work (a request): it
   * refuses statements while its own transaction is open. The database
   * itself is shared by concurrent work, so it cannot.
   */
  handle(): Db;
  /** The text of a statement, for the few places that compose whitelisted fragments into it. */
  statement(name: string): Statement;
  /** Ends the pool (letting queries finish for up to `timeoutSeconds`) and closes the embedded database. */
  close(timeoutSeconds?: number): Promise<void>;
}

/** A statement called on a handle whose transaction is open: it belongs on the handle `begin()` handed over. */
export class TransactionOpenError extends Error {
  override name = 'TransactionOpenError';
  constructor(statement: string) {
    super(`${statement} ran on a handle whose transaction is open; use the handle begin() handed to its callback`);
  }
}

export const QUERIES_DIR = join(SQL_DIR, 'queries');

/**
 * Opens the database `options` describe: the pool (and the embedded
 * database, when there is no server), the statements of `sql/queries/`, the
 * count of the pool's use, and the pool's own handle.
 */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  const { sql, embedded, cancelAfter } = await connect(options);
  const statements = loadStatements(QUERIES_DIR);
  const statement = (name: string): Statement => {
    const found = statements.get(name);
    if (found === undefined) throw new StatementError(`no SQL statement named ${name} in sql/queries/`);
    return found;
  };
  const handleOn = handles(sql, statement, countPoolUsage(sql, embedded ? 1 : options.poolMax), cancelAfter);
  const { savepoint: _savepoint, ...onPool } = handleOn(sql, false);
  return {
    ...onPool,
    sql,
    kind: embedded ? 'embedded' : 'postgres',
    created: embedded?.created ?? false,
    statement,
    handle: (): Db => handleOn(sql, true),
    async close(timeoutSeconds = 5) {
      await sql.end({ timeout: timeoutSeconds });
      await embedded?.close();
    },
  };
}

/**
 * The handles on `sql` and its transactions, each running named statements
 * (`statement`) counted in the pool's use when run on the pool itself, and
 * cancelled as the connection keeps the statement time-out (`cancelAfter`).
 */
function handles(
  sql: Sql,
  statement: (name: string) => Statement,
  { pool, counted }: PoolCounter,
  cancelAfter: Connection['cancelAfter'],
): (on: Queryable, guarded: boolean) => Tx {
  /**
   * Runs statement `name` on `on`, refusing a statement whose header
   * declares a result shape the caller does not take (`-- name: X :one`
   * run with `many()` is a bug in one of the two), and a `:one` that
   * returned more than one row.
   */
  const run = async (
    name: string,
    shape: ResultShape,
    params: readonly Param[],
    on: Queryable,
    fragments?: Readonly<Record<string, string>>,
  ) => {
    const found = statement(name);
    // A composed statement is a page (:many) or the count beside it (:one).
    if (found.shape !== shape && !(fragments !== undefined && found.shape === 'one'))
      throw new StatementError(`${name} is declared :${found.shape} in ${found.file} but was run as :${shape}`);
    const text = fragments === undefined ? found.text : fill(found, fragments);
    const query = on.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare: true });
    const result = await cancelAfter(on === sql ? counted(query) : query, query);
    if (found.shape === 'one' && result.length > 1)
      throw new StatementError(`${name} is declared :one but returned ${result.length} rows`);
    return result;
  };

  /** A handle on `on`; `guarded`: it refuses statements while its own transaction is open. */
  const handleOn = (on: Queryable, guarded: boolean): Tx => {
    let open = false;
    const ready = (name: string) => {
      if (open) throw new TransactionOpenError(name);
    };
    type Inner<T> = (tx: postgres.TransactionSql<Record<string, never>>) => Promise<T>;
    /** Runs `work` on a new handle of the transaction `start` opens, refusing this handle's statements meanwhile. */
    const nested = async <T>(
      work: (db: Tx) => Promise<T>,
      start: (inner: Inner<T>) => Promise<unknown>,
    ): Promise<T> => {
      ready('a transaction');
      if (guarded) open = true;
      try {
        return (await start((tx) => work(handleOn(tx, true)))) as T;
      } finally {
        open = false;
      }
    };
    // The pool's own handles are typed `Db` where they are handed out.
    const handle: Omit<Tx, typeof bound> = {
      pool,
      async one<T>(name: string, params: readonly Param[] = []) {
        ready(name);
        return (await run(name, 'one', params, on))[0] as T | undefined;
      },
      async many<T>(name: string, params: readonly Param[] = []) {
        ready(name);
        return [...(await run(name, 'many', params, on))] as T[];
      },
      async composed<T>(name: string, fragments: Readonly<Record<string, string>>, params: readonly Param[] = []) {
        ready(name);
        return [...(await run(name, 'many', params, on, fragments))] as T[];
      },
      async exec(name: string, params: readonly Param[] = []) {
        ready(name);
        return (await run(name, 'exec', params, on)).count;
      },
      begin<T>(work: (db: Tx) => Promise<T>): Promise<T> {
        // On a transaction, the same one; on the pool, a new one (counted by `sql.begin`: countPoolUsage()).
        return nested(work, (inner) => ('savepoint' in on ? inner(on) : on.begin(inner)));
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

const PLACEHOLDER = /\{\{([a-zA-Z]+)\}\}/g;

function fill(statement: Statement, fragments: Readonly<Record<string, string>>): string {
  return statement.text.replace(PLACEHOLDER, (_, key: string) => {
    const fragment = fragments[key];
    if (fragment === undefined) throw new Error(`statement ${statement.name} needs the fragment {{${key}}}`);
    return fragment;
  });
}
