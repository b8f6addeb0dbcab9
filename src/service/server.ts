/**
 * Starting the whole service, step by step: the database with its
 * migrations and demo data, the rate limits shared through Redis, the read
 * replica, the HTTP server, then the purges and the webhook worker. The
 * graceful shutdown of contract §1 is shutdown.ts's.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../pipeline/pipeline.ts';
import type { ReplicaReads, Tuning } from '../pipeline/context.ts';
import { createAuthenticator } from '../auth/authenticator.ts';
import type { Config } from '../config/config.ts';
import { openDatabase, type Database } from '../db/database.ts';
import { migrate } from '../db/migrate.ts';
import { awaitDatabase } from '../db/wait.ts';
import { orderFormat } from '../orders/format.ts';
import { createDemoTokens, seed, type DemoTokens } from './seed.ts';
import type { NodeServer } from '../http/node-adapter.ts';
import { createListener, listenError } from './listener.ts';
import { type CursorKeys, cursorKeys, serviceKey } from '../db/keys.ts';
import { createLogger, errorFields, type Logger } from '../base/logger.ts';
import { routes } from './routes.ts';
import { SHUTDOWN_GRACE_MS, shutdown } from './shutdown.ts';
import { openSharedLimits, type SharedLimits } from '../limits/shared-limits.ts';
import { createHttpMetrics, type HttpMetrics } from '../metrics/http-metrics.ts';
import { localPositions, redisPositions } from '../replica/positions.ts';
import { openReplica } from '../replica/replica.ts';
import {
  DEFAULT_WORKER_OPTIONS,
  startDeliveryWorker,
  type DeliveryWorker,
  type WorkerOptions,
} from '../webhooks/worker.ts';

export interface StartOptions {
  readonly log?: Logger;
  /** Called with the demo tokens when this start created the embedded database. */
  readonly onDemoTokens?: (tokens: DemoTokens) => void;
  /** Bounds and timings whose production defaults tests make small or short. */
  readonly tuning?: Tuning;
  /**
   * The database as the requests see it, made from the one opened: tests wrap it to inject a fault after a
   * statement (test/support/db-faults.ts). Default: the database itself.
   */
  readonly database?: (opened: Database) => Database;
  /** How long a request may wait for the database in all; contract §11's 5 s unless a test shortens it. */
  readonly databaseDeadlineMs?: number;
  /** contract §11's time for a request head (10 s); tests shorten it. */
  readonly headersTimeoutMs?: number;
  /** The webhook worker's timings (tests make them short); defaults in src/webhooks/worker.ts. */
  readonly webhooks?: Partial<Omit<WorkerOptions, 'allowPrivate'>>;
}

export interface RunningServer {
  /** `http://host:port`, the port resolved when `PORT=0`. */
  readonly url: string;
  readonly port: number;
  readonly db: Database;
  /** The rate limits shared through Redis, with `REDIS_URL` (and `RATE_LIMIT` not `off`); else `undefined`. */
  readonly sharedLimits: SharedLimits | undefined;
  /** What the app counts for GET /metrics: a cluster worker reports it to the primary (contract §13). */
  readonly metrics: HttpMetrics;
  /** Stops accepting, lets requests in flight finish (up to `graceMs`), closes the database. */
  close(graceMs?: number): Promise<void>;
}

export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  const log = options.log ?? createLogger(config.logLevel);
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolMax: config.dbPoolMax,
    prepare: config.dbPrepare,
    onCircuit: {
      onOpen: (error) =>
        log.warn('database unreachable: statements refused at once while one connection probes', errorFields(error)),
      onClose: (outageMs) => log.info('database reachable again', { outageMs: Math.round(outageMs) }),
    },
  });
  let server: NodeServer | undefined;
  let purgeTimer: NodeJS.Timeout | undefined;
  let cursors: CursorKeys | undefined;
  let worker: DeliveryWorker | undefined;
  let sharedLimits: SharedLimits | undefined;
  let reads: ReplicaReads | undefined;
  const metrics = createHttpMetrics();
  let tokens: DemoTokens | undefined;
  try {
    tokens = await prepareDatabase(db, config, log);
    cursors = await cursorKeys(db, (error) => log.warn('cursor keys not read', { error: String(error) }));
    const tokenKey = await serviceKey(db, 'token');
    const tuning = options.tuning ?? {};
    sharedLimits = await openLimits(config, log, tuning);
    reads = await openReads(config, db, log, tuning);
    const app = createApp(
      {
        config,
        metrics,
        ...(reads === undefined ? {} : { reads }),
        db: options.database?.(db) ?? db,
        log,
        cursorKeys: cursors,
        authenticator: createAuthenticator(db, tokenKey),
        tuning,
        ...(options.databaseDeadlineMs === undefined ? {} : { databaseDeadlineMs: options.databaseDeadlineMs }),
        ...(sharedLimits === undefined ? {} : { sharedLimits }),
      },
      routes,
    );
    server = createListener(app, config, metrics, log, options.headersTimeoutMs);
    await listen(server.server, config.port, config.host);
    // Shown once the port is held (main.ts checked it before anything was created: contract §1).
    if (tokens !== undefined) options.onDemoTokens?.(tokens);
    tokens = undefined;
    purgeTimer = schedulePurge(db, log);
    worker = startDeliveryWorker(db, log, {
      ...DEFAULT_WORKER_OPTIONS,
      ...options.webhooks,
      allowPrivate: config.webhookAllowPrivate,
    });
  } catch (error) {
    // A new database was made, then the start failed: its tokens are shown all the same, never lost.
    if (tokens !== undefined) options.onDemoTokens?.(tokens);
    server?.server.close();
    sharedLimits?.close();
    reads?.positions.close();
    await reads?.replica.close();
    await db.close(0);
    throw error;
  }
  const { port } = server.server.address() as AddressInfo;
  const running = server;
  const limits = sharedLimits;
  const replicaReads = reads;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}`,
    port,
    db,
    sharedLimits: limits,
    metrics,
    close(graceMs = SHUTDOWN_GRACE_MS) {
      clearInterval(purgeTimer);
      cursors?.stop();
      // Stop accepting at once; the worker stops alongside (aborting its
      // attempts, which are recorded and retried later); Redis once the
      // requests are done; the database last.
      closing ??= shutdown(running, db, graceMs, worker?.stop() ?? Promise.resolve(), limits, replicaReads);
      return closing;
    },
  };
}

/**
 * Waits for the database (`DATABASE_WAIT`), applies the pending migrations; a new embedded database also gets the
 * demo data and tokens, returned.
 */
async function prepareDatabase(db: Database, config: Config, log: Logger): Promise<DemoTokens | undefined> {
  await awaitDatabase(db, config, log);
  const applied = await migrate(db);
  if (applied.length > 0) log.info('migrations applied', { migrations: applied });
  orderFormat(); // found now, from the migrations' text, rather than at the first order's tag
  if (!db.created) return undefined;
  await seed(db);
  return createDemoTokens(db);
}

/** contract §17: waits for Redis at most its connect time-out; unreachable, the process counts on its own. */
async function openLimits(config: Config, log: Logger, tuning: Tuning): Promise<SharedLimits | undefined> {
  if (config.redisUrl === undefined || config.rateLimit === undefined) return undefined;
  const keyPrefix = tuning.redisKeyPrefix;
  return openSharedLimits({
    url: config.redisUrl,
    limit: config.rateLimit,
    log,
    ...(keyPrefix === undefined ? {} : { keyPrefix }),
  });
}

/** contract §17: the replica and where each principal last wrote, kept as long as REPLICA_MAX_LAG (and a second). */
async function openReads(config: Config, db: Database, log: Logger, tuning: Tuning): Promise<ReplicaReads | undefined> {
  if (config.databaseReadUrl === undefined) return undefined;
  const ttlMs = (config.replicaMaxLagSeconds + 1) * 1000;
  const positions =
    config.redisUrl === undefined
      ? localPositions(ttlMs)
      : await redisPositions({
          url: config.redisUrl,
          ttlMs,
          log,
          // Tests run apart in one Redis database by their own prefix.
          ...(tuning.redisKeyPrefix === undefined ? {} : { prefix: `${tuning.redisKeyPrefix}ryw:` }),
        });
  try {
    const replica = await openReplica({
      url: config.databaseReadUrl,
      primary: db,
      maxLagSeconds: config.replicaMaxLagSeconds,
      poolMax: config.dbPoolMax,
      prepare: config.dbPrepare,
      log,
      ...(tuning.replicaPollMs === undefined ? {} : { pollMs: tuning.replicaPollMs }),
    });
    return { replica, positions };
  } catch (error) {
    positions.close();
    throw error;
  }
}

/**
 * How often the running server deletes idempotency keys older than 24 hours (contract §7) and events older than 30 days
 * (§15).
 */
export const PURGE_INTERVAL_MS = 60 * 60 * 1000;

/** Purges at start (a process restarted more often than hourly still purges) and then hourly. */
function schedulePurge(db: Database, log: Logger): NodeJS.Timeout {
  const purge = () => {
    for (const [statement, what] of [
      ['PurgeIdempotencyKeys', 'idempotency keys'],
      ['PurgeEvents', 'events'],
    ] as const) {
      db.exec(statement).then(
        (count) => log.info(`${what} purged`, { count }),
        (error: unknown) => log.warn(`${what} purge failed`, { error: String(error) }),
      );
    }
  };
  purge();
  const timer = setInterval(purge, PURGE_INTERVAL_MS);
  timer.unref();
  return timer;
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const fail = (error: Error) => reject(listenError(error, port, host));
    server.once('error', fail);
    server.listen(port, host, () => {
      server.off('error', fail);
      resolve();
    });
  });
}
