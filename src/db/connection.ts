/**
 * The connection to PostgreSQL: a `postgres` pool on `DATABASE_URL`, or on
 * the embedded database's socket when it is unset or `memory:`, with the
 * service's settings: identifiers as numbers, the statement time-out of
 * contract §11 (kept by the server, or by the client through a
 * transaction-mode pooler), quick reconnection, and stalled links dropped.
 */
import postgres from 'postgres';
import type { EmbeddedDatabase } from './embedded.ts';

export type Sql = postgres.Sql<Record<string, never>>;

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
  /** A read replica's pool: a statement whose header says it writes is refused (contract §17). */
  readonly readOnly?: boolean;
  /** Told when the circuit opens (statements refused at once) and closes again (contract §17; circuit.ts). */
  readonly onCircuit?: { onOpen?(error: unknown): void; onClose?(outageMs: number): void };
}

const BIGINT_OID = 20;

/** contract §11: the server cancels a statement after 5 s. */
export const STATEMENT_TIMEOUT_MS = 5_000;
/**
 * A session idle inside a transaction for this long is ended by the server, which rolls it back: the service
 * never waits that long between a transaction's statements (a request gives up after 5 s in all), so only a
 * transaction whose client is gone (a link cut with its COMMIT or ROLLBACK unsent) lasts so long, holding its
 * locks until then.
 */
export const IDLE_IN_TRANSACTION_MS = 2 * STATEMENT_TIMEOUT_MS;

/**
 * A connection to a real server that has received nothing for this long
 * while an answer is due is dropped (the driver's `stall_timeout`, added by
 * patch 005 of patches/): the server answers every statement within the
 * statement timeout, so silence past it is a dead or blackholed link, which
 * TCP keep-alive never notices when a proxy's kernel still acknowledges.
 * Idle connections are left alone.
 */
export const STALLED_CONNECTION_MS = STATEMENT_TIMEOUT_MS + 2_000;

/**
 * Seconds before the driver reconnects after its `retries`-th failed
 * attempt in a row (contract §17): 50 ms doubling up to 1 s, of which a half
 * is random (the processes of a service that lost its database at once do
 * not come back at once). The driver's own grows to 20 s, longer than any
 * request waits (contract §11); patch 012 makes it apply to every attempt.
 *
 * @example
 * reconnectDelaySeconds(1) // 0.05 to 0.1
 * reconnectDelaySeconds(9) // 0.5 to 1
 */
export function reconnectDelaySeconds(retries: number, random: () => number = Math.random): number {
  const ceiling = Math.min(0.025 * 2 ** retries, 1);
  return ceiling * (0.5 + random() / 2);
}

/** The driver's options for either kind of database, `max` connections. */
function poolOptions(max: number, prepare: boolean): postgres.Options<Record<string, postgres.PostgresType>> {
  return {
    max,
    prepare,
    // Through a transaction-mode pooler, one statement at a time per connection: an unnamed statement
    // with parameters is described first (Parse, Describe, Flush; then Bind, Execute, Sync), and sent
    // behind another statement on the same connection, PgBouncer 1.18 can leave that exchange
    // unanswered (seen here: a hang until the 5 s cancel). Concurrency comes from the pool's connections.
    ...(prepare ? {} : { max_pipeline: 0 }),
    connect_timeout: 5,
    idle_timeout: 60,
    backoff: (retries: number) => reconnectDelaySeconds(retries),
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
    // contract §11: 5 s per statement; and a transaction left open by a link that died (its COMMIT or ROLLBACK
    // never arrived) is ended by the server (contract §17). PGlite ignores both (it has no timers). A
    // transaction-mode pooler refuses them (PgBouncer: "unsupported startup parameter"), or drops them when told
    // to ignore them: then `cancelAfterTimeout` below, and the pooler's idle_transaction_timeout.
    connection: prepare
      ? {
          application_name: 'orders',
          statement_timeout: STATEMENT_TIMEOUT_MS,
          idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS,
        }
      : { application_name: 'orders' },
  };
}

/** A statement left to the server's own time-out (or, embedded, to none). */
const uncancelled = <T>(work: Promise<T>): Promise<T> => work;

/** A pool, open. */
export interface Connection {
  readonly sql: Sql;
  /** The embedded database the pool is on; `undefined` on a real server. */
  readonly embedded: EmbeddedDatabase | undefined;
  /** Runs a statement's `work`, cancelling `query` when the client keeps the time-out (`cancelAfterTimeout`). */
  readonly cancelAfter: <T>(work: Promise<T>, query: { cancel(): Promise<unknown> }) => Promise<T>;
}

/** Opens the pool `options` describe: on the embedded database (started here) or on a server. */
export async function connect(options: DatabaseOptions): Promise<Connection> {
  const prepare = options.prepare ?? true;
  const common = poolOptions(options.poolMax, prepare);
  if (options.databaseUrl === undefined || options.databaseUrl === 'memory:') {
    // Loaded only here: a process on a real server never loads PGlite (tens of MB).
    const { openEmbedded } = await import('./embedded.ts');
    const embedded = await openEmbedded(
      options.databaseUrl === 'memory:' ? undefined : options.dataDir,
      options.poolMax,
    );
    // One connection: PGlite has a single backend, so the unnamed portals and
    // statements of concurrent connections would clobber one another
    // (SQLSTATE 34000 "portal does not exist"). The pool queues instead.
    // PGlite's socket ignores a CancelRequest and never closes its connection (patch 013's cancel_requests).
    const sql = postgres({
      ...common,
      cancel_requests: false,
      max: 1,
      path: embedded.socketPath,
      username: 'postgres',
      database: 'postgres',
    } as typeof common) as unknown as Sql;
    return { sql, embedded, cancelAfter: uncancelled };
  }
  // Not for the embedded database: it runs in this process, where a long
  // statement holds back the timers too, and no link between can fail.
  // `stall_timeout` (seconds) is the patch's option, unknown to the driver's types.
  const stall_timeout = (options.stalledConnectionMs ?? STALLED_CONNECTION_MS) / 1000;
  const sql = postgres(options.databaseUrl, { ...common, stall_timeout } as typeof common) as unknown as Sql;
  return { sql, embedded: undefined, cancelAfter: prepare ? uncancelled : cancelAfterTimeout };
}

/**
 * contract §11 through a transaction-mode pooler: the server session is the
 * pooler's, so the client keeps the statement time-out. A statement still
 * running after `STATEMENT_TIMEOUT_MS` is cancelled with PostgreSQL's
 * CancelRequest, which PgBouncer passes to the server session running it;
 * the statement fails with 57014 as under `statement_timeout`.
 */
async function cancelAfterTimeout<T>(work: Promise<T>, query: { cancel(): Promise<unknown> }): Promise<T> {
  // The statement's own failure (57014, or its connection's loss) says what came of it: the cancel's is dropped.
  const timer = setTimeout(() => query.cancel().catch(() => {}), STATEMENT_TIMEOUT_MS);
  try {
    return await work;
  } finally {
    clearTimeout(timer);
  }
}
