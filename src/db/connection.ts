/** The `postgres` pool on `DATABASE_URL`, or on the embedded database's socket, with the service's settings. */
import postgres from 'postgres';
import type { EmbeddedDatabase } from './embedded.ts';

export type Sql = postgres.Sql<Record<string, never>>;

export interface DatabaseOptions {
  /** `undefined`: embedded in `dataDir`; `memory:`: embedded in memory; else a postgres:// URL. */
  readonly databaseUrl: string | undefined;
  readonly dataDir: string;
  readonly poolMax: number;
  /** Instead of `STALLED_CONNECTION_MS` (`0`: never), for tools that lift the statement timeout. */
  readonly stalledConnectionMs?: number;
  /**
   * `false` (`DB_PREPARE=off`) behind a transaction-mode pooler, which hands each transaction (or statement outside
   * one) to any of its server sessions: no named prepared statements, no startup parameter a pooler refuses, and
   * the statement time-out kept by the client (`cancelAfterTimeout`). Default `true`.
   */
  readonly prepare?: boolean;
  /** A read replica's pool: a statement whose header says it writes is refused. */
  readonly readOnly?: boolean;
  /** Told when the circuit opens and closes again (circuit.ts). */
  readonly onCircuit?: { onOpen?(error: unknown): void; onClose?(outageMs: number): void };
}

const BIGINT_OID = 20;

/** contract §11: the server cancels a statement after 5 s. */
export const STATEMENT_TIMEOUT_MS = 5_000;
/**
 * The server rolls back a session idle in a transaction this long. No request waits that long (5 s in all), so
 * only a transaction whose link was cut before its COMMIT or ROLLBACK lasts so long, holding its locks until then.
 */
export const IDLE_IN_TRANSACTION_MS = 2 * STATEMENT_TIMEOUT_MS;

/**
 * A real server's connection silent this long while an answer is due is dropped (`stall_timeout`, patch 005):
 * past the statement timeout, silence is a dead or blackholed link, which TCP keep-alive misses when a proxy's
 * kernel still acknowledges. Idle connections are left alone.
 */
export const STALLED_CONNECTION_MS = STATEMENT_TIMEOUT_MS + 2_000;

/**
 * Seconds before reconnecting after the `retries`-th failure in a row: 50 ms doubling to 1 s, half of it random so
 * that processes that lost their database together do not return together. The driver's own grows to 20 s,
 * longer than any request waits; patch 012 makes it apply to every attempt.
 */
export function reconnectDelaySeconds(retries: number, random: () => number = Math.random): number {
  const ceiling = Math.min(0.025 * 2 ** retries, 1);
  return ceiling * (0.5 + random() / 2);
}

/** The pool's `application_name`: its backends, in `pg_stat_activity`, are the requests' work. */
export const APPLICATION_NAME = 'orders';
/** The operations connection's: readiness and the metrics' figures, apart from the requests' work. */
export const OPERATIONS_APPLICATION_NAME = 'orders-operations';

function poolOptions(
  max: number,
  prepare: boolean,
  name = APPLICATION_NAME,
): postgres.Options<Record<string, postgres.PostgresType>> {
  return {
    max,
    prepare,
    // Through a transaction-mode pooler, no pipelining: an unnamed statement with parameters is described first
    // (Parse, Describe, Flush; then Bind, Execute, Sync), and sent behind another statement on the same connection,
    // PgBouncer 1.18 can leave that exchange unanswered.
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
    // PGlite ignores these (it has no timers). A transaction-mode pooler refuses them ("unsupported startup
    // parameter") or drops them: then `cancelAfterTimeout` and the pooler's idle_transaction_timeout stand in.
    connection: prepare
      ? {
          application_name: name,
          statement_timeout: STATEMENT_TIMEOUT_MS,
          idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS,
        }
      : { application_name: name },
  };
}

const uncancelled = <T>(work: Promise<T>): Promise<T> => work;

/** A pool, open. */
export interface Connection {
  readonly sql: Sql;
  /**
   * On a real server, one connection of its own for the statements of health checks and metrics (contract §14: they
   * keep answering under overload): the pool's queue is the driver's, first come first served, and under overload
   * it holds the requests' work; a readiness check queued behind it would time out. It connects when first used.
   * `undefined` on the embedded database, which takes one connection.
   */
  readonly operations: Sql | undefined;
  readonly embedded: EmbeddedDatabase | undefined;
  /** Runs a statement's `work`, cancelling `query` if the client keeps the time-out. */
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
    // One connection: PGlite has a single backend, where the unnamed portals of concurrent connections clobber
    // one another (34000 "portal does not exist"). Its socket ignores a CancelRequest (patch 013's cancel_requests).
    const sql = postgres({
      ...common,
      cancel_requests: false,
      max: 1,
      path: embedded.socketPath,
      username: 'postgres',
      database: 'postgres',
    } as typeof common) as unknown as Sql;
    return { sql, operations: undefined, embedded, cancelAfter: uncancelled };
  }
  // Not for the embedded database: in this process, a long statement holds back the timers too, and no link can
  // fail. `stall_timeout` (seconds) is patch 005's option, unknown to the driver's types.
  const stall_timeout = (options.stalledConnectionMs ?? STALLED_CONNECTION_MS) / 1000;
  const sql = postgres(options.databaseUrl, { ...common, stall_timeout } as typeof common) as unknown as Sql;
  const operations = postgres(options.databaseUrl, {
    ...poolOptions(1, prepare, OPERATIONS_APPLICATION_NAME),
    stall_timeout,
  } as typeof common) as unknown as Sql;
  return { sql, operations, embedded: undefined, cancelAfter: prepare ? uncancelled : cancelAfterTimeout };
}

/**
 * The statement time-out kept by the client, behind a transaction-mode pooler: a CancelRequest, which PgBouncer
 * passes to the server session running the statement, fails it with 57014 as `statement_timeout` would.
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
