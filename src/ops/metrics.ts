/**
 * `GET /metrics` (contract §13, §16): the service's figures in the Prometheus
 * text exposition format. No token unless `METRICS_TOKEN` is set, then that
 * bearer token (compared in constant time). Outside the API versions, never
 * cached; open to anyone, it is rate limited like any anonymous request, and
 * behind METRICS_TOKEN a successful scrape is not counted (src/pipeline/pipeline.ts;
 * docs/operations.md, "Metrics").
 *
 * The figures are the instance's: with `WORKERS=N`, every worker's summed
 * (src/metrics/instance.ts). The database's (webhook deliveries, the event
 * log's age) come from one statement with a deadline, read at most once per
 * `METRICS_DATABASE_MAX_AGE_MS`: a database that does not answer in time
 * leaves them out and sets `orders_metrics_database_success` to 0, so a
 * stalled database never hangs a scrape.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { HandlerServices, RequestContext, RouteSpec } from '../pipeline/context.ts';
import { parseAuthorization } from '../auth/tokens.ts';
import type { Db } from '../db/database.ts';
import { withDeadline } from '../db/errors.ts';
import { HttpError } from '../http/problem.ts';
import { bufferedResponse } from '../http/response.ts';
import { EXPOSITION_CONTENT_TYPE, family, labels, sample } from '../metrics/exposition.ts';
import { HTTP_FAMILIES, type HttpMetrics } from '../metrics/http-metrics.ts';
import { instanceView, localSnapshot } from '../metrics/instance.ts';
import { POOL_FAMILIES, PROCESS_FAMILIES, SHARED_LIMIT_FAMILIES } from '../metrics/process-figures.ts';
import { renderFamilies } from '../metrics/snapshot.ts';
import type { ReplicaStatus } from '../replica/replica.ts';

/** How long a scrape waits for the database's figures. */
export const METRICS_DATABASE_TIMEOUT_MS = 1_000;
/** contract §13: how long the database's figures are kept; a scrape within it of their read repeats them. */
export const METRICS_DATABASE_MAX_AGE_MS = 10_000;

const REALM = 'metrics';

interface Figures {
  deliveries_pending: number;
  deliveries_failed: number;
  oldest_event_age_seconds: number;
}

/** A read of the database's figures: when it began, and what it gave (`undefined`: nothing in time). */
interface Read {
  readonly at: number;
  readonly figures: Promise<Figures | undefined>;
}

/** The last read, per app (one per process but in tests): by the app's recorder, which it makes once. */
const lastReads = new WeakMap<HttpMetrics, Read>();

export const metricsRoute: RouteSpec = {
  method: 'GET',
  pattern: '/metrics',
  auth: 'public',
  versioned: false,
  // contract §13: open to anyone, a scrape is a request like any other; behind METRICS_TOKEN, never counted.
  rateLimited: 'unless-token',
  overload: 'exempt',
  credential: checkMetricsToken,
  doc: {
    summary: 'Prometheus metrics',
    description: [
      "The service's figures in the Prometheus text exposition format 0.0.4 (text/plain; version=0.0.4): " +
        'requests by route pattern, method and status;',
      'latency by route pattern and method; rate-limit refusals, and with REDIS_URL the requests counted without ' +
        'Redis; the database pool; webhook deliveries pending ' +
        'and failed; the age of the oldest event in the log;',
      "and the process's memory, CPU time and start time. With WORKERS=N the figures are the instance's: every " +
        "worker's summed. The database's figures are read at most once per 10 s.",
      'Needs no token unless the server sets METRICS_TOKEN, then that bearer token (401 otherwise).',
      'Never cached. Without METRICS_TOKEN a scrape is counted against its address like any anonymous request; ' +
        'with it, a successful scrape is not counted.',
    ].join(' '),
    success: { status: 200, media: { 'text/plain; version=0.0.4': { type: 'string' } } },
    // Only behind METRICS_TOKEN.
    problems: [[401, 'unauthorized']],
  },
  async handler(ctx) {
    const metrics = ctx.services.metrics;
    if (metrics === undefined) throw new Error("GET /metrics needs the pipeline's metrics (createApp sets them)");
    // The pool as the service's own work uses it: read before the scrape's statement.
    const local = localSnapshot(metrics, ctx.db.pool, ctx.services.sharedLimits?.status());
    const [view, figures] = await Promise.all([instanceView(local), databaseFigures(ctx, metrics)]);
    if (view.workers !== undefined)
      ctx.services.log.debug('metrics: instance view', {
        requestId: ctx.requestId,
        pid: process.pid,
        workers: view.workers,
        stale: view.stale,
      });
    const text =
      renderFamilies(view.figures, HTTP_FAMILIES) +
      renderFamilies(view.figures, POOL_FAMILIES) +
      renderFamilies(view.figures, SHARED_LIMIT_FAMILIES) +
      databaseFamilies(figures) +
      replicaFamilies(ctx.services.reads?.replica.status()) +
      renderFamilies(view.figures, PROCESS_FAMILIES);
    return bufferedResponse(Buffer.from(text, 'utf8'), {
      status: 200,
      headers: { 'content-type': EXPOSITION_CONTENT_TYPE, 'cache-control': 'no-store' },
    });
  },
};

/** 401 unless `METRICS_TOKEN` is unset or `authorization` carries it as its bearer token. */
function checkMetricsToken(authorization: string | null, services: HandlerServices): void {
  const expected = services.config.metricsToken;
  if (expected === undefined) return;
  const credentials = parseAuthorization(authorization);
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

/**
 * The database's figures: those of the last read when it began less than
 * `METRICS_DATABASE_MAX_AGE_MS` ago (a read under way included, so that
 * scrapes at once share it), else of a new read.
 */
function databaseFigures(ctx: RequestContext, recorder: HttpMetrics): Promise<Figures | undefined> {
  const maxAge = ctx.services.tuning?.metricsDatabaseMaxAgeMs ?? METRICS_DATABASE_MAX_AGE_MS;
  const now = performance.now();
  const last = lastReads.get(recorder);
  if (last !== undefined && now - last.at < maxAge) return last.figures;
  const read: Read = { at: now, figures: readFigures(ctx.db) };
  lastReads.set(recorder, read);
  return read.figures;
}

/** The statement's figures, or `undefined` when the database did not give them in time. */
async function readFigures(db: Db): Promise<Figures | undefined> {
  try {
    return await withDeadline(db.one('MetricsFigures'), METRICS_DATABASE_TIMEOUT_MS);
  } catch {
    // Whatever the cause (a stalled or unreachable database), the scrape goes on
    // without these figures; orders_metrics_database_success says so.
    return undefined;
  }
}

/** contract §17: the read replica as the answering process's monitor sees it; nothing without DATABASE_READ_URL. */
function replicaFamilies(status: ReplicaStatus | undefined): string {
  if (status === undefined) return '';
  return (
    family(
      'orders_replica_in_use',
      'gauge',
      '1 while the read replica (DATABASE_READ_URL) serves reads, 0 while it lags past REPLICA_MAX_LAG or cannot be ' +
        'reached and the primary answers; as the answering process sees it.',
      [sample('orders_replica_in_use', '', status.state === 'in-use' ? 1 : 0)],
    ) +
    family(
      'orders_replica_lag_seconds',
      'gauge',
      'How far the read replica is behind the primary, in seconds (0 when it has replayed all the primary had); ' +
        'absent while it cannot be reached.',
      status.lagSeconds === undefined ? [] : [sample('orders_replica_lag_seconds', '', status.lagSeconds)],
    )
  );
}

function databaseFamilies(figures: Figures | undefined): string {
  const success = family(
    'orders_metrics_database_success',
    'gauge',
    `1 when the last read of the database's figures (webhook deliveries, event log age) got them within ` +
      `${METRICS_DATABASE_TIMEOUT_MS} ms, else 0 and they are left out. They are read at most once per ` +
      `${METRICS_DATABASE_MAX_AGE_MS / 1000} s: a scrape sooner after a read repeats its outcome.`,
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
