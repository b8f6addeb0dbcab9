/**
 * The figures of `GET /metrics` that belong to a process rather than to its
 * requests: its database pool and the standard process series (the names
 * every Prometheus client library uses), as snapshots (src/metrics/snapshot.ts).
 * With `WORKERS=N` (contract §13) the pool gauges and the resident memory are
 * summed over the live processes, CPU time is a counter (an exited worker's
 * stays in the sum), and the start time is the primary's: the instance's.
 */
import type { PoolUsage } from '../db/pool-usage.ts';
import type { FamilyDoc, Snapshot } from './snapshot.ts';

export const POOL_FAMILIES: readonly FamilyDoc[] = [
  {
    name: 'orders_db_pool_max_connections',
    type: 'gauge',
    help:
      'Connections the database pool may open (DB_POOL_MAX; 1 for the embedded database); ' +
      "with WORKERS=N, the workers' sum.",
  },
  {
    name: 'orders_db_pool_connections_in_use',
    type: 'gauge',
    help: "Pool connections busy with a statement or a transaction; with WORKERS=N, the workers' sum.",
  },
  {
    name: 'orders_db_pool_queries_waiting',
    type: 'gauge',
    help: "Statements and transactions waiting for a pool connection; with WORKERS=N, the workers' sum.",
  },
  {
    name: 'orders_db_circuit_open',
    type: 'gauge',
    help:
      'Processes whose circuit to the database is open: statements refused at once (503) while one connection ' +
      'probes with backoff, after connections failed in a row; 0 while the database is reached.',
  },
];

export const PROCESS_FAMILIES: readonly FamilyDoc[] = [
  {
    name: 'process_cpu_seconds_total',
    type: 'counter',
    help: 'Total user and system CPU time spent in seconds (with WORKERS=N, of every process the instance ran).',
  },
  {
    name: 'process_resident_memory_bytes',
    type: 'gauge',
    help: 'Resident memory size in bytes (with WORKERS=N, the primary and its live workers).',
  },
  {
    name: 'process_start_time_seconds',
    type: 'gauge',
    help: 'Start time of the process since unix epoch in seconds (with WORKERS=N, the primary).',
  },
];

/**
 * The rate limits shared through Redis (contract §17), as src/limits/shared-limits.ts reports them; `undefined`
 * without `REDIS_URL` (or with `RATE_LIMIT=off`).
 */
export interface SharedLimitsFigures {
  readonly redisInUse: boolean;
  readonly fallbackRequests: number;
}

export const SHARED_LIMIT_FAMILIES: readonly FamilyDoc[] = [
  {
    name: 'orders_rate_limit_redis_processes',
    type: 'gauge',
    help:
      'Processes counting rate limits in Redis now (REDIS_URL): 1 per process, summed over WORKERS; 0 while a ' +
      'process counts on its own for want of Redis, and always 0 without REDIS_URL.',
  },
  {
    name: 'orders_rate_limit_fallback_requests_total',
    type: 'counter',
    help: "Requests counted in a process's own windows because Redis could not be reached (REDIS_URL set).",
  },
];

/** Whether this process counts in Redis now, and the requests it counted on its own for want of it. */
export function sharedLimitsSnapshot(figures: SharedLimitsFigures | undefined): Snapshot {
  return {
    counters: { orders_rate_limit_fallback_requests_total: { '': figures?.fallbackRequests ?? 0 } },
    histograms: {},
    gauges: { orders_rate_limit_redis_processes: { '': figures?.redisInUse ? 1 : 0 } },
  };
}

/** The pool's use now: connections it may open, busy, and the work waiting for one. */
export function poolSnapshot(pool: PoolUsage): Snapshot {
  return {
    counters: {},
    histograms: {},
    gauges: {
      orders_db_pool_max_connections: { '': pool.size },
      orders_db_pool_connections_in_use: { '': pool.inUse },
      orders_db_pool_queries_waiting: { '': pool.waiting },
      orders_db_circuit_open: { '': pool.circuitOpen ? 1 : 0 },
    },
  };
}

/** This process's CPU time so far and its resident memory now. */
export function processSnapshot(): Snapshot {
  const cpu = process.cpuUsage();
  return {
    counters: { process_cpu_seconds_total: { '': (cpu.user + cpu.system) / 1e6 } },
    histograms: {},
    gauges: { process_resident_memory_bytes: { '': process.memoryUsage.rss() } },
  };
}

/** When this process started, in seconds since the epoch. */
const START_TIME_SECONDS = Math.round(performance.timeOrigin) / 1000;

/** The start time of the process that answers for the instance (the primary with `WORKERS=N`). */
export function startTimeSnapshot(): Snapshot {
  return { counters: {}, histograms: {}, gauges: { process_start_time_seconds: { '': START_TIME_SECONDS } } };
}
