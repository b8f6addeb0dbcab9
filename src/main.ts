/** `make run`: start the service with the configuration of the environment and `.env` (contract §1). */
import cluster from 'node:cluster';
import { type Config, loadConfig } from './config/config.ts';
import { ConfigError } from './config/values.ts';
import { ENV_FILE, EnvFileError } from './config/env-file.ts';
import { loadEnvSettings } from './config/settings.ts';
import { awaitDatabase, DatabaseWaitError } from './db/wait.ts';
import { openDatabase } from './db/database.ts';
import { checkListen, ListenError } from './service/listener.ts';
import { createLogger, errorFields, type Logger } from './base/logger.ts';
import { type RunningServer, startServer } from './service/server.ts';
import { MigrationError } from './db/migrate.ts';
import { EmbeddedDatabaseError, isDatabaseUnavailable, poolerHint } from './db/errors.ts';
import { startupFix } from './db/hints.ts';
import { answerPrimary, createInstanceFigures, localSnapshot } from './metrics/instance.ts';

async function main(): Promise<void> {
  const startedAt = performance.now();
  // Where each variable set by .env (and not by the environment) is, for the messages that name one.
  const fromFile = new Map<string, number>();
  const config = readConfig(fromFile);
  // Before anything is created or shown once (a new embedded database's tokens): the port can be had.
  if (cluster.isPrimary) await checkPort(config, fromFile);
  const log = createLogger(config.logLevel);
  // contract §1 "Faults": a driver promise that nothing awaits and that fails
  // because the database went away must not end the process (the patched
  // driver leaves none we know of). Anything else is a bug: crash loudly.
  process.on('unhandledRejection', (reason) => {
    if (!isDatabaseUnavailable(reason)) throw reason;
    log.warn('database unavailable (no request waiting)', errorFields(reason));
  });
  if (config.workers > 1 && cluster.isPrimary) {
    // contract §17: without Redis each worker counts its own windows.
    if (config.rateLimit !== undefined && config.redisUrl === undefined)
      log.warn('rate limits: counted per process (no REDIS_URL)', {
        workers: config.workers,
        instanceAllows: `up to ${config.workers} × ${config.rateLimit.limit} per ${config.rateLimit.windowSeconds} s`,
      });
    // The primary waits for the database once (DATABASE_WAIT), so that N workers do not each ask and log.
    await waitOnce(config, log).catch((error: unknown) => cannotStart(error, fromFile, log));
    runPrimary(config.workers, log, startedAt);
    return;
  }
  let server: RunningServer;
  try {
    server = await startServer(config, {
      log,
      // contract §14: this process's event loop, watched for overload once it serves (an app made elsewhere, a
      // test's, has none). Not on the embedded database: there the loop's delay is the database's own statements,
      // one at a time, and a lone user's long query would get their next requests refused.
      tuning: { loopWatch: config.databaseUrl !== undefined && config.databaseUrl !== 'memory:' },
      onDemoTokens: (tokens) => {
        process.stderr.write(
          '\nA new embedded database was created with the demo catalog and users.\n' +
            'These tokens are shown once; keep them:\n' +
            `  admin:    ${tokens.admin}\n` +
            `  customer: ${tokens.customer}\n\n`,
        );
      },
    });
  } catch (error) {
    cannotStart(error, fromFile, log);
  }
  const stop = (signal: string) => {
    log.info('shutting down', { signal });
    server.close().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`orders: shutdown failed: ${String(error)}\n`);
        process.exit(1);
      },
    );
  };
  // `on`, not `once`: a terminal's Ctrl-C reaches the primary and the
  // workers alike, and the primary passes it on again; close() is idempotent.
  // Before "listening" is announced: whoever reads it may signal at once.
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  if (cluster.isWorker) {
    // contract §13: the primary asks a worker for its figures once it says it listens (below).
    answerPrimary(() => localSnapshot(server.metrics, server.db.pool, server.sharedLimits?.status()));
  }
  const database =
    server.db.kind === 'embedded'
      ? config.databaseUrl === 'memory:'
        ? 'embedded (in memory)'
        : `embedded (${config.dataDir})`
      : 'postgres';
  log.info('listening', {
    url: server.url,
    database,
    startupMs: Math.round(performance.now() - startedAt),
    ...(cluster.isWorker ? { worker: cluster.worker?.id, pid: process.pid } : {}),
  });
  if (cluster.isPrimary) process.stderr.write(`orders: listening on ${server.url} (database: ${database})\n`);
  else process.send?.({ listening: server.url, database });
}

/** The configuration of the environment over `.env`; a mistake in either ends the process (exit 2). */
function readConfig(fromFile: Map<string, number>): Config {
  try {
    // contract §1: the working directory's .env supplies what the environment does
    // not set. Into process.env itself, so that cluster workers inherit it.
    const { env, unknown, lineOf } = loadEnvSettings(process.env, process.cwd());
    for (const [name, line] of lineOf) if (process.env[name] === undefined) fromFile.set(name, line);
    if (cluster.isPrimary) for (const line of unknown) process.stderr.write(`orders: warning: ${line}\n`);
    Object.assign(process.env, env);
    return loadConfig();
  } catch (error) {
    if (error instanceof EnvFileError) {
      process.stderr.write(`orders: ${error.message}\n`);
      process.exit(2);
    }
    if (error instanceof ConfigError) {
      process.stderr.write(`orders: invalid configuration: ${error.message}${whereSet(error.message, fromFile)}\n`);
      process.exit(2);
    }
    throw error;
  }
}

/** Ends the process (exit 1) when `PORT` on `HOST` cannot be listened on. */
async function checkPort(config: Config, fromFile: ReadonlyMap<string, number>): Promise<void> {
  try {
    await checkListen(config.port, config.host);
  } catch (error) {
    if (!(error instanceof ListenError)) throw error;
    process.stderr.write(`orders: cannot start: ${error.message}${whereSet(error.message, fromFile)}\n`);
    process.exit(1);
  }
}

/**
 * Ends the process (exit 1): whatever stops start-up (a changed migration, a database that cannot be reached, a
 * data directory in use) is one line for the operator, not a stack.
 */
function cannotStart(error: unknown, fromFile: ReadonlyMap<string, number>, log: Logger): never {
  const known =
    error instanceof MigrationError ||
    error instanceof EmbeddedDatabaseError ||
    error instanceof DatabaseWaitError ||
    error instanceof ListenError;
  const message = error instanceof Error ? error.message : String(error);
  const fix = startupFix(error) ?? startupFix((error as { cause?: unknown } | null)?.cause);
  process.stderr.write(
    `orders: cannot start: ${message}${whereSet(message, fromFile)}${fix === undefined ? '' : `; ${fix}`}\n`,
  );
  const hint = poolerHint(error);
  if (hint !== undefined) process.stderr.write(`orders: ${hint}\n`);
  if (!known) log.error('start-up failed', errorFields(error));
  process.exit(1);
}

/** WORKERS>1: waits for the database (`DATABASE_WAIT`) on one connection of its own, then lets it go. */
async function waitOnce(config: Config, log: Logger): Promise<void> {
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolMax: 1,
    prepare: config.dbPrepare,
  });
  try {
    await awaitDatabase(db, config, log);
  } finally {
    await db.close(0);
  }
}

/** ` (.env line N)` when `message` starts with the name of a variable that `.env` set, else nothing. */
function whereSet(message: string, fromFile: ReadonlyMap<string, number>): string {
  const name = /^[A-Z][A-Z0-9_]*/.exec(message)?.[0];
  const line = name === undefined ? undefined : fromFile.get(name);
  return line === undefined ? '' : ` (${ENV_FILE} line ${line})`;
}

/**
 * `WORKERS=N`: N HTTP processes on one port (node:cluster), each with its own
 * pool; the primary forks, restarts a worker that dies, passes SIGTERM/SIGINT
 * on, and sums the workers' figures for GET /metrics (contract §13,
 * src/metrics/instance.ts). Rate limits are per worker unless REDIS_URL
 * shares them (contract §17; docs/operations.md).
 */
function runPrimary(workers: number, log: ReturnType<typeof createLogger>, startedAt: number): void {
  let stopping = false;
  let listening = 0;
  const onMessage = (message: { listening?: string; database?: string }) => {
    if (message.listening === undefined) return;
    listening += 1;
    if (listening === workers) {
      log.info('listening', { url: message.listening, workers, startupMs: Math.round(performance.now() - startedAt) });
      process.stderr.write(
        `orders: listening on ${message.listening} (database: ${message.database}, ${workers} workers)\n`,
      );
    }
  };
  const ready = new Set<number>();
  const figures = createInstanceFigures(log);
  const fork = () => {
    const worker = cluster.fork();
    worker.on('message', (message: { listening?: string; database?: string }) => {
      if (figures.onMessage(worker, message)) return;
      if (message.listening !== undefined) {
        ready.add(worker.id);
        figures.join(worker);
      }
      onMessage(message);
    });
  };
  for (let i = 0; i < workers; i++) fork();
  cluster.on('exit', (worker, code, signal) => {
    figures.leave(worker);
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(process.exitCode ?? 0);
      return;
    }
    if (!ready.has(worker.id)) {
      // It never started (the worker printed why): starting another would fail alike.
      stopping = true;
      log.error('a worker failed to start; stopping', { worker: worker.id, code, signal });
      for (const other of Object.values(cluster.workers ?? {})) other?.process.kill('SIGTERM');
      process.exitCode = 1;
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(1);
      return;
    }
    log.error('worker died; starting another', { worker: worker.id, code, signal });
    fork();
  });
  const stop = (signal: NodeJS.Signals) => {
    stopping = true;
    log.info('shutting down', { signal, workers });
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill(signal);
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

await main();
