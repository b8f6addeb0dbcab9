/**
 * The one way the service reaches PostgreSQL: a `postgres` pool on
 * `DATABASE_URL`, or on the embedded database's socket when it is unset or
 * `memory:`. Statements come by name from `sql/queries/` (see statements.ts).
 */
import postgres from 'postgres';
import { join } from 'node:path';
import { SQL_DIR } from './sql-files.ts';
import type { EmbeddedDatabase } from './embedded.ts';
import { loadStatements, StatementError, type ResultShape, type Statement } from './statements.ts';

export type Sql = postgres.Sql<Record<string, never>>;
/** The pool, or a transaction taken from it. */
type Queryable = Sql | postgres.TransactionSql<Record<string, never>>;
export type Param = string | number | boolean | null | Date | Uint8Array | readonly string[];

export interface DatabaseOptions {
  /** `undefined`: embedded in `dataDir`; `memory:`: embedded in memory; else a postgres:// URL. */
  readonly databaseUrl: string | undefined;
  readonly dataDir: string;
  readonly poolMax: number;
  /**
   * Drop a real server's connection that has received nothing for this long
   * while an answer is due (`STALLED_CONNECTION_MS` by default); `0` never
   * does. Only for tools that lift the statement timeout for long statements
   * (the benchmark's seeding): the service keeps the default.
   */
  readonly stalledConnectionMs?: number;
  /**
   * `false` (`DB_PREPARE=off`, contract §17): for a transaction-mode pooler. No
   * named prepared statements (the pooler hands each transaction, or each
   * statement outside one, to any of its server sessions), and no startup
   * parameter but the ones a pooler passes on: the statement time-out is then
   * kept by the client, which cancels a statement still running after
   * `STATEMENT_TIMEOUT_MS`. Default `true`.
   */
  readonly prepare?: boolean;
}

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

/**
 * The pool's use, counted here around every statement run on the pool and
 * every transaction (`sql.begin`), since the `postgres` driver exposes
 * neither its busy connections nor its queue. A statement inside a
 * transaction is the transaction's. A connection runs one statement or
 * transaction at a time (the driver pipelines further statements onto busy
 * connections, where they wait all the same), so of `active` pieces of
 * work, `size` at most hold a connection and the rest wait. Two additions
 * per statement: every request pays for it.
 */
export interface PoolUsage {
  /** Connections the pool may open (`DB_POOL_MAX`; 1 for the embedded database). */
  readonly size: number;
  /** Connections busy with a statement or a transaction. */
  readonly inUse: number;
  /** Statements and transactions waiting for a connection. */
  readonly waiting: number;
}

export const QUERIES_DIR = join(SQL_DIR, 'queries');

const BIGINT_OID = 20;

/** contract §11: the server cancels a statement after 5 s. */
export const STATEMENT_TIMEOUT_MS = 5_000;
/**
 * A connection to a real server that has received nothing for this long
 * while an answer is due is dropped (the driver's `stall_timeout`, added by
 * scripts/patch-postgres.mjs): the server answers every statement within the
 * statement timeout, so silence past it is a dead or blackholed link, which
 * TCP keep-alive never notices when a proxy's kernel still acknowledges.
 * Idle connections are left alone.
 */
export const STALLED_CONNECTION_MS = STATEMENT_TIMEOUT_MS + 2_000;

/**
 * Seconds before the driver reconnects after its `retries`-th failure in a
 * row: 50 ms doubling up to 1 s. (The driver's own grows to 20 s, longer
 * than any request waits: contract §11.)
 */
export function reconnectDelaySeconds(retries: number): number {
  return Math.min(0.05 * 2 ** retries, 1);
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  let embedded: EmbeddedDatabase | undefined;
  const prepare = options.prepare ?? true;
  const common: postgres.Options<Record<string, postgres.PostgresType>> = {
    max: options.poolMax,
    prepare,
    // Through a transaction-mode pooler, one statement at a time per connection: an unnamed statement
    // with parameters is described first (Parse, Describe, Flush; then Bind, Execute, Sync), and sent
    // behind another statement on the same connection, PgBouncer 1.18 can leave that exchange
    // unanswered (seen here: a hang until the 5 s cancel). Concurrency comes from the pool's connections.
    ...(prepare ? {} : { max_pipeline: 0 }),
    connect_timeout: 5,
    idle_timeout: 60,
    backoff: reconnectDelaySeconds,
    onnotice: () => {},
    // Identifiers are bigint but always within 2^53−1 (contract §2): JSON numbers.
    types: {
      bigint: {
        to: BIGINT_OID,
        from: [BIGINT_OID],
        serialize: (v: number) => String(v),
        parse: (v: string) => Number(v),
      },
    },
    // contract §11: 5 s per statement. PGlite ignores it (it has no timers). A
    // transaction-mode pooler refuses it (PgBouncer: "unsupported startup
    // parameter"), or drops it when told to ignore it: then `cancelAfter` below.
    connection: prepare
      ? { application_name: 'orders', statement_timeout: STATEMENT_TIMEOUT_MS }
      : { application_name: 'orders' },
  };
  let sql: Sql;
  if (options.databaseUrl === undefined || options.databaseUrl === 'memory:') {
    // Loaded only here: a process on a real server never loads PGlite (tens of MB).
    const { openEmbedded } = await import('./embedded.ts');
    embedded = await openEmbedded(options.databaseUrl === 'memory:' ? undefined : options.dataDir, options.poolMax);
    // One connection: PGlite has a single backend, so the unnamed portals and
    // statements of concurrent connections would clobber one another
    // (SQLSTATE 34000 "portal does not exist"). The pool queues instead.
    sql = postgres({
      ...common,
      max: 1,
      path: embedded.socketPath,
      username: 'postgres',
      database: 'postgres',
    }) as unknown as Sql;
  } else {
    // Not for the embedded database: it runs in this process, where a long
    // statement holds back the timers too, and no link between can fail.
    // `stall_timeout` (seconds) is the patch's option, unknown to the driver's types.
    const stall_timeout = (options.stalledConnectionMs ?? STALLED_CONNECTION_MS) / 1000;
    sql = postgres(options.databaseUrl, { ...common, stall_timeout } as typeof common) as unknown as Sql;
  }
  const statements = loadStatements(QUERIES_DIR);
  const statement = (name: string): Statement => {
    const found = statements.get(name);
    if (found === undefined) throw new StatementError(`no SQL statement named ${name} in sql/queries/`);
    return found;
  };
  let active = 0;
  const counted = async <T>(work: PromiseLike<T>): Promise<T> => {
    active += 1;
    try {
      return await work;
    } finally {
      active -= 1;
    }
  };
  // Every transaction, also those begun on the driver's pool itself (migrations, tests).
  const begin = sql.begin.bind(sql) as (...args: unknown[]) => Promise<unknown>;
  (sql as unknown as { begin: (...args: unknown[]) => Promise<unknown> }).begin = (...args) => counted(begin(...args));
  const size = embedded ? 1 : options.poolMax;
  const pool: PoolUsage = {
    size,
    get inUse() {
      return Math.min(active, size);
    },
    get waiting() {
      return Math.max(0, active - size);
    },
  };

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

  /**
   * contract §11 through a transaction-mode pooler: the server session is the
   * pooler's, so the client keeps the statement time-out. A statement still
   * running after `STATEMENT_TIMEOUT_MS` is cancelled with PostgreSQL's
   * CancelRequest, which PgBouncer passes to the server session running it;
   * the statement fails with 57014 as under `statement_timeout`.
   */
  const cancelAfter: <T>(work: Promise<T>, query: { cancel(): unknown }) => Promise<T> =
    prepare || embedded !== undefined
      ? (work) => work
      : async (work, query) => {
          const timer = setTimeout(() => query.cancel(), STATEMENT_TIMEOUT_MS);
          try {
            return await work;
          } finally {
            clearTimeout(timer);
          }
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
        // On a transaction, the same one; on the pool, a new one (counted by `sql.begin` above).
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

  const embeddedDb = embedded;
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
      await embeddedDb?.close();
    },
  };
}

const PLACEHOLDER = /\{\{([a-zA-Z]+)\}\}/g;

function fill(statement: Statement, fragments: Readonly<Record<string, string>>): string {
  return statement.text.replace(PLACEHOLDER, (_, key: string) => {
    const fragment = fragments[key];
    if (fragment === undefined) throw new Error(`statement ${statement.name} needs the fragment {{${key}}}`);
    return fragment;
  });
}
