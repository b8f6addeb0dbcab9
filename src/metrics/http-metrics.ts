/**
 * What the request pipeline counts for `GET /metrics` (contract §16): requests by route pattern, method and
 * status, their latency, and rate-limit refusals. Recording is on every request's path, so it is a few Map
 * lookups, no string building: a route's label is made at its first request. Labels come only from the route
 * table and fixed lists, never from the request (no id, token or raw path). A scrape takes a `snapshot()`.
 */
import { labels } from './exposition.ts';
import { type FamilyDoc, type Histogram, renderFamilies, type Snapshot } from './snapshot.ts';

/** The route label of a request no route matched. */
export const UNMATCHED = 'unmatched';

/** Upper bounds (seconds) of the latency histogram's buckets: 1 ms to 10 s (contract §11's deadline is 5 s). */
export const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

/** The methods counted by name; any other is `other`. */
const METHODS: ReadonlySet<string> = new Set([
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
  'TRACE',
  'CONNECT',
]);

export type Limiter = 'user' | 'address';
export type ConnectionCap = 'process' | 'address';
/** What refused a request under overload (contract §14): the event loop's delay, or the database's turns. */
export type Shed = 'loop' | 'turns';

/** The HTTP server's connection and body figures, read at each scrape. */
export interface ConnectionGauges {
  /** Connections open now. */
  readonly connections: () => number;
  /** Bytes the request bodies in flight hold now (against `BODY_BUDGET_BYTES`). */
  readonly bodyBytes: () => number;
  /** The database's turns (src/http/admission.ts): held now, and the limit now. */
  readonly turns?: () => { readonly inFlight: number; readonly limit: number };
}

export interface HttpMetrics {
  /**
   * Counts one request: `pattern` is its route's (`/orders/{id:int}`), `undefined` when none matched; `status`
   * `undefined` when the client left before any answer (counted as `aborted`, not in the latency histogram).
   */
  request(pattern: string | undefined, method: string, status: number | undefined, seconds: number): void;
  /** Counts one request refused with 429 by the users' or the addresses' table. */
  rateLimited(limiter: Limiter): void;
  /** Counts one connection closed as it arrived, past the process's cap or its client address's. */
  connectionRefused(cap: ConnectionCap): void;
  /** Counts one request refused with 503 under overload, by what refused it. */
  shed(by: Shed): void;
  /** Where the gauges of connections and bodies are read at a scrape: the HTTP server's, once it is made. */
  watch(gauges: ConnectionGauges): void;
  /** The figures so far as plain data (src/metrics/snapshot.ts), the families of `HTTP_FAMILIES`. */
  snapshot(): Snapshot;
  /** This recorder's families alone, in the text exposition format. */
  render(): string;
}

/** What the exposition says of the families the recorder keeps, in the order it writes them. */
export const HTTP_FAMILIES: readonly FamilyDoc[] = [
  {
    name: 'orders_http_requests_total',
    type: 'counter',
    help: 'Requests answered, by route pattern, method and status (aborted: the client left before the answer).',
  },
  {
    name: 'orders_http_request_duration_seconds',
    type: 'histogram',
    help: "Time from a request's arrival to its answer, by route pattern and method.",
    buckets: DURATION_BUCKETS,
  },
  {
    name: 'orders_rate_limited_total',
    type: 'counter',
    help:
      "Requests refused with 429, by the table that refused them (user: a token's user; address: a client " +
      'address, for its anonymous requests or its failed authentications).',
  },
  {
    name: 'orders_connections_refused_total',
    type: 'counter',
    help:
      'Connections closed as they arrived (contract §11), by the cap they would have passed (process: ' +
      'MAX_CONNECTIONS; address: MAX_CONNECTIONS_PER_ADDRESS).',
  },
  {
    name: 'orders_overload_refused_total',
    type: 'counter',
    help:
      'Requests refused with 503 under overload (contract §14), by what refused them (loop: the event loop was ' +
      "saturated; turns: the database's turns were all taken).",
  },
  {
    name: 'orders_connections_open',
    type: 'gauge',
    help: "HTTP connections open now; with WORKERS=N, the workers' sum.",
  },
  {
    name: 'orders_request_body_bytes',
    type: 'gauge',
    help: 'Bytes held by the request bodies being read or handled now (of BODY_BUDGET_BYTES each process).',
  },
  {
    name: 'orders_database_turns',
    type: 'gauge',
    help: "Requests doing database work now, waiting for a connection included; with WORKERS=N, the workers' sum.",
  },
  {
    name: 'orders_database_turns_limit',
    type: 'gauge',
    help:
      'The most requests let do their database work at once now: the highest completion rate of the last 10 s ' +
      "times 100 ms, 128 at least; with WORKERS=N, the workers' sum.",
  },
];

interface MethodSeries {
  /** Requests by status (a number, or 0 for aborted). */
  readonly statuses: Map<number, number>;
  /** Non-cumulative counts per bucket; the last one is +Inf. */
  readonly buckets: Float64Array;
  sum: number;
  count: number;
}

interface RouteSeries {
  readonly label: string;
  readonly methods: Map<string, MethodSeries>;
}

/** `/orders/{id:int}` → `/orders/{id}`: the route's pattern as the OpenAPI document writes it. */
export function routeLabel(pattern: string): string {
  return pattern.replace(/\{([a-zA-Z][a-zA-Z0-9]*)(?::[a-z]+)?\}/g, '{$1}');
}

/** A recorder of the pipeline's figures, one per app. */
export function createHttpMetrics(): HttpMetrics {
  const routes = new Map<string, RouteSeries>();
  const refused = { user: 0, address: 0 };
  const connections = { process: 0, address: 0 };
  const shed = { loop: 0, turns: 0 };
  let gauges: ConnectionGauges | undefined;

  const seriesOf = (pattern: string | undefined, method: string): MethodSeries => {
    const key = pattern ?? UNMATCHED;
    let route = routes.get(key);
    if (route === undefined) {
      route = { label: pattern === undefined ? UNMATCHED : routeLabel(pattern), methods: new Map() };
      routes.set(key, route);
    }
    const name = METHODS.has(method) ? method : 'other';
    let series = route.methods.get(name);
    if (series === undefined) {
      series = { statuses: new Map(), buckets: new Float64Array(DURATION_BUCKETS.length + 1), sum: 0, count: 0 };
      route.methods.set(name, series);
    }
    return series;
  };

  const metrics: HttpMetrics = {
    request(pattern, method, status, seconds) {
      const series = seriesOf(pattern, method);
      const code = status ?? 0;
      series.statuses.set(code, (series.statuses.get(code) ?? 0) + 1);
      if (status === undefined) return;
      let bucket = 0;
      while (bucket < DURATION_BUCKETS.length && seconds > (DURATION_BUCKETS[bucket] as number)) bucket++;
      series.buckets[bucket] = (series.buckets[bucket] as number) + 1;
      series.sum += seconds;
      series.count += 1;
    },
    rateLimited(limiter) {
      refused[limiter] += 1;
    },
    connectionRefused(cap) {
      connections[cap] += 1;
    },
    shed(by) {
      shed[by] += 1;
    },
    watch(given) {
      gauges = given;
    },
    snapshot() {
      const requests: Record<string, number> = {};
      const durations: Record<string, Histogram> = {};
      for (const route of routes.values()) {
        for (const [method, series] of route.methods) {
          for (const [status, count] of series.statuses) {
            const code = status === 0 ? 'aborted' : String(status);
            requests[labels({ route: route.label, method, status: code })] = count;
          }
          if (series.count === 0) continue;
          durations[labels({ route: route.label, method })] = {
            buckets: Array.from(series.buckets),
            sum: series.sum,
            count: series.count,
          };
        }
      }
      const turns = gauges?.turns?.();
      // A new counter is one line here and one in HTTP_FAMILIES: merging and rendering know no family by name.
      return {
        counters: {
          orders_http_requests_total: requests,
          orders_rate_limited_total: {
            [labels({ limiter: 'user' })]: refused.user,
            [labels({ limiter: 'address' })]: refused.address,
          },
          orders_connections_refused_total: {
            [labels({ cap: 'process' })]: connections.process,
            [labels({ cap: 'address' })]: connections.address,
          },
          orders_overload_refused_total: {
            [labels({ by: 'loop' })]: shed.loop,
            [labels({ by: 'turns' })]: shed.turns,
          },
        },
        histograms: { orders_http_request_duration_seconds: durations },
        gauges: {
          orders_connections_open: { '': gauges?.connections() ?? 0 },
          orders_request_body_bytes: { '': gauges?.bodyBytes() ?? 0 },
          orders_database_turns: { '': turns?.inFlight ?? 0 },
          orders_database_turns_limit: { '': turns?.limit ?? 0 },
        },
      };
    },
    render() {
      return renderFamilies(metrics.snapshot(), HTTP_FAMILIES);
    },
  };
  return metrics;
}
