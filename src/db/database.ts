/**
 * The one way the service reaches PostgreSQL: a `postgres` pool on
 * `DATABASE_URL`, or on the embedded database's socket when it is unset or
 * `memory:`. Statements come by name from `sql/queries/` (see statements.ts).
 */
import postgres from 'postgres';
import { join } from 'node:path';
import { SQL_DIR } from './sql-files.ts';
import type { EmbeddedDatabase } from './embedded.ts';
import { loadStatements, type Statement } from './statements.ts';

export type Sql = postgres.Sql<Record<string, never>>;
/** The pool, or a transaction or reserved connection taken from it. */
export type Queryable = postgres.Sql<Record<string, never>> | postgres.TransactionSql<Record<string, never>> | postgres.ReservedSql<Record<string, never>>;
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
}

export interface Database {
  readonly sql: Sql;
  readonly kind: 'embedded' | 'postgres';
  /** True when this start created the embedded database (never for a real server). */
  readonly created: boolean;
  /** Runs a `:one` statement; `undefined` when it returned no row. */
  one<T>(name: string, params?: readonly Param[], on?: Queryable): Promise<T | undefined>;
  /** Runs a `:many` statement. */
  many<T>(name: string, params?: readonly Param[], on?: Queryable): Promise<T[]>;
  /**
   * Runs a `:many` statement whose `{{name}}` placeholders are filled with
   * `fragments`. Fragments must come from fixed whitelists (sort orders,
   * optional filters), never from a request: values travel in `params`.
   */
  composed<T>(name: string, fragments: Readonly<Record<string, string>>, params?: readonly Param[], on?: Queryable): Promise<T[]>;
  /** Runs an `:exec` statement and returns the number of rows it touched. */
  exec(name: string, params?: readonly Param[], on?: Queryable): Promise<number>;
  /** The text of a statement, for the few places that compose whitelisted fragments into it. */
  statement(name: string): Statement;
  /** Ends the pool (letting queries finish for up to `timeoutSeconds`) and closes the embedded database. */
  close(timeoutSeconds?: number): Promise<void>;
  /** What the pool is doing now (GET /metrics). */
  readonly pool: PoolUsage;
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

/** SPEC §11: the server cancels a statement after 5 s. */
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
 * than any request waits: SPEC §11.)
 */
export function reconnectDelaySeconds(retries: number): number {
  return Math.min(0.05 * 2 ** retries, 1);
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  let embedded: EmbeddedDatabase | undefined;
  const common: postgres.Options<Record<string, postgres.PostgresType>> = {
    max: options.poolMax,
    connect_timeout: 5,
    idle_timeout: 60,
    backoff: reconnectDelaySeconds,
    onnotice: () => {},
    // Identifiers are bigint but always within 2^53−1 (SPEC §2): JSON numbers.
    types: {
      bigint: { to: BIGINT_OID, from: [BIGINT_OID], serialize: (v: number) => String(v), parse: (v: string) => Number(v) },
    },
    // SPEC §11: 5 s per statement. PGlite ignores it (it has no timers).
    connection: { application_name: 'orders', statement_timeout: STATEMENT_TIMEOUT_MS },
  };
  let sql: Sql;
  if (options.databaseUrl === undefined || options.databaseUrl === 'memory:') {
    // Loaded only here: a process on a real server never loads PGlite (tens of MB).
    const { openEmbedded } = await import('./embedded.ts');
    embedded = await openEmbedded(options.databaseUrl === 'memory:' ? undefined : options.dataDir, options.poolMax);
    // One connection: PGlite has a single backend, so the unnamed portals and
    // statements of concurrent connections would clobber one another
    // (SQLSTATE 34000 "portal does not exist"). The pool queues instead.
    sql = postgres({ ...common, max: 1, path: embedded.socketPath, username: 'postgres', database: 'postgres' }) as unknown as Sql;
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
    if (found === undefined) throw new Error(`no SQL statement named ${name} in sql/queries/`);
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
  // Every transaction, also those begun outside this file (src/idempotency.ts).
  const begin = sql.begin.bind(sql) as (...args: unknown[]) => Promise<unknown>;
  (sql as unknown as { begin: (...args: unknown[]) => Promise<unknown> }).begin = (...args) => counted(begin(...args));
  const run = (name: string, params: readonly Param[], on: Queryable) => {
    const query = on.unsafe(statement(name).text, params as postgres.ParameterOrJSON<never>[], { prepare: true });
    return on === sql ? counted(query) : query;
  };
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
  const embeddedDb = embedded;
  return {
    sql,
    kind: embedded ? 'embedded' : 'postgres',
    created: embedded?.created ?? false,
    pool,
    statement,
    async one<T>(name: string, params: readonly Param[] = [], on: Queryable = sql) {
      const rows = await run(name, params, on);
      return rows[0] as T | undefined;
    },
    async many<T>(name: string, params: readonly Param[] = [], on: Queryable = sql) {
      return [...(await run(name, params, on))] as T[];
    },
    async composed<T>(name: string, fragments: Readonly<Record<string, string>>, params: readonly Param[] = [], on: Queryable = sql) {
      const text = fill(statement(name), fragments);
      const query = on.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare: true });
      return [...(await (on === sql ? counted(query) : query))] as T[];
    },
    async exec(name: string, params: readonly Param[] = [], on: Queryable = sql) {
      return (await run(name, params, on)).count;
    },
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

/**
 * Runs `fn` in the transaction `on` when the caller is already in one (an
 * idempotent request's savepoint), else in a new transaction of the pool.
 */
export async function inTransaction<T>(db: Database, on: Queryable | undefined, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  if (on !== undefined) return fn(on);
  return db.sql.begin((tx) => fn(tx as unknown as Queryable)) as Promise<T>;
}
