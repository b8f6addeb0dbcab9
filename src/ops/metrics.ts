/**
 * `GET /metrics` (contract §16): the service's figures in the Prometheus text
 * exposition format. No token unless `METRICS_TOKEN` is set, then that
 * bearer token (compared in constant time). Outside the API versions, never
 * cached, and a successful scrape is not counted against any rate limit
 * (src/pipeline/pipeline.ts; docs/operations.md, "Metrics").
 *
 * The database's figures (webhook deliveries, the event log's age) come from
 * one statement with a deadline: a database that does not answer in time
 * leaves them out and sets `orders_metrics_database_success` to 0, so a
 * stalled database never hangs a scrape.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestContext, RouteSpec } from '../pipeline/context.ts';
import { parseAuthorization } from '../auth/tokens.ts';
import type { Db } from '../db/database.ts';
import { withDeadline } from '../db/errors.ts';
import { fieldOf } from '../http/node-adapter.ts';
import { HttpError } from '../http/problem.ts';
import { bufferedResponse } from '../http/response.ts';
import { EXPOSITION_CONTENT_TYPE, family, labels, sample } from '../metrics/exposition.ts';

/** How long a scrape waits for the database's figures. */
export const METRICS_DATABASE_TIMEOUT_MS = 1_000;

const REALM = 'metrics';

interface Figures {
  deliveries_pending: number;
  deliveries_failed: number;
  oldest_event_age_seconds: number;
}

export const metricsRoute: RouteSpec = {
  method: 'GET',
  pattern: '/metrics',
  auth: 'public',
  versioned: false,
  rateLimited: false,
  doc: {
    summary: 'Prometheus metrics',
    description: [
      "The service's figures in the Prometheus text exposition format 0.0.4 (text/plain; version=0.0.4): " +
        'requests by route pattern, method and status;',
      'latency by route pattern and method; rate-limit refusals; the database pool; webhook deliveries pending ' +
        'and failed; the age of the oldest event in the log;',
      "and the process's memory, CPU time and start time. Needs no token unless the server sets METRICS_TOKEN, " +
        'then that bearer token (401 otherwise).',
      'Never cached; a successful scrape is not counted against the rate limit.',
    ].join(' '),
    success: { status: 200 },
  },
  async handler(ctx) {
    const metrics = ctx.services.metrics;
    if (metrics === undefined) throw new Error("GET /metrics needs the pipeline's metrics (createApp sets them)");
    authorize(ctx);
    // The pool as the service's own work uses it: read before the scrape's statement.
    const pool = poolFamilies(ctx.db);
    const figures = await databaseFigures(ctx.db);
    const text = metrics.render() + pool + databaseFamilies(figures) + processFamilies();
    return bufferedResponse(Buffer.from(text, 'utf8'), {
      status: 200,
      headers: { 'content-type': EXPOSITION_CONTENT_TYPE, 'cache-control': 'no-store' },
    });
  },
};

/** 401 unless `METRICS_TOKEN` is unset or the request carries it as its bearer token. */
function authorize(ctx: RequestContext): void {
  const expected = ctx.services.config.metricsToken;
  if (expected === undefined) return;
  const credentials = parseAuthorization(fieldOf(ctx.request, 'authorization'));
  // Hashes of equal length, compared in constant time: the time taken says nothing of the token.
  if (credentials.kind === 'bearer' && timingSafeEqual(digest(credentials.token), digest(expected))) return;
  throw new HttpError(401, 'unauthorized', {
    detail:
      credentials.kind === 'none'
        ? 'GET /metrics needs the bearer token the server was given in METRICS_TOKEN.'
        : 'The bearer token is not the one in METRICS_TOKEN.',
    headers: {
      'www-authenticate':
        credentials.kind === 'none' ? `Bearer realm="${REALM}"` : `Bearer realm="${REALM}", error="invalid_token"`,
    },
  });
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** The statement's figures, or `undefined` when the database did not give them in time. */
async function databaseFigures(db: Db): Promise<Figures | undefined> {
  try {
    return await withDeadline(db.one<Figures>('MetricsFigures'), METRICS_DATABASE_TIMEOUT_MS);
  } catch {
    // Whatever the cause (a stalled or unreachable database), the scrape goes on
    // without these figures; orders_metrics_database_success says so.
    return undefined;
  }
}

function poolFamilies(db: Db): string {
  const { pool } = db;
  return [
    family(
      'orders_db_pool_max_connections',
      'gauge',
      'Connections the database pool may open (DB_POOL_MAX; 1 for the embedded database).',
      [sample('orders_db_pool_max_connections', '', pool.size)],
    ),
    family('orders_db_pool_connections_in_use', 'gauge', 'Pool connections busy with a statement or a transaction.', [
      sample('orders_db_pool_connections_in_use', '', pool.inUse),
    ]),
    family('orders_db_pool_queries_waiting', 'gauge', 'Statements and transactions waiting for a pool connection.', [
      sample('orders_db_pool_queries_waiting', '', pool.waiting),
    ]),
  ].join('');
}

function databaseFamilies(figures: Figures | undefined): string {
  const success = family(
    'orders_metrics_database_success',
    'gauge',
    `1 when this scrape read the database's figures (webhook deliveries, event log age) within ` +
      `${METRICS_DATABASE_TIMEOUT_MS} ms, else 0 and they are left out.`,
    [sample('orders_metrics_database_success', '', figures === undefined ? 0 : 1)],
  );
  if (figures === undefined) return success;
  return (
    success +
    [
      family(
        'orders_webhook_deliveries',
        'gauge',
        'Webhook deliveries by status: pending (to be attempted or retried) and failed (given up after the last ' +
          'retry).',
        [
          sample('orders_webhook_deliveries', labels({ status: 'pending' }), figures.deliveries_pending),
          sample('orders_webhook_deliveries', labels({ status: 'failed' }), figures.deliveries_failed),
        ],
      ),
      family(
        'orders_event_log_oldest_event_age_seconds',
        'gauge',
        'Seconds since the oldest event the log still holds (0 when empty): how far back GET /events reaches; ' +
          'above 30 days the hourly purge is not running.',
        [sample('orders_event_log_oldest_event_age_seconds', '', figures.oldest_event_age_seconds)],
      ),
    ].join('')
  );
}

/** When this process started, in seconds since the epoch. */
const START_TIME_SECONDS = Math.round(performance.timeOrigin) / 1000;

/** The standard process families (the names every Prometheus client library uses). */
function processFamilies(): string {
  const cpu = process.cpuUsage();
  return [
    family('process_cpu_seconds_total', 'counter', 'Total user and system CPU time spent in seconds.', [
      sample('process_cpu_seconds_total', '', (cpu.user + cpu.system) / 1e6),
    ]),
    family('process_resident_memory_bytes', 'gauge', 'Resident memory size in bytes.', [
      sample('process_resident_memory_bytes', '', process.memoryUsage.rss()),
    ]),
    family('process_start_time_seconds', 'gauge', 'Start time of the process since unix epoch in seconds.', [
      sample('process_start_time_seconds', '', START_TIME_SECONDS),
    ]),
  ].join('');
}
