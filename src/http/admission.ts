/**
 * contract §14, overload: how many requests may be doing their database work at once, counting those waiting in
 * the driver's queue for a connection. A request past the limit is refused at once (503, `Retry-After`), none of its
 * statements sent, so that a refusal costs its client no wait.
 *
 * The limit is Little's law: the requests the service can complete per second, times the longest a request should
 * take in there (`targetMs`). So many in flight drain within `targetMs`; more would only wait, past their clients'
 * patience, in a queue no one bounds. It is the limit of TCP BBR and of Kratos's BBR limiter (the rate delivered
 * times a time), with the time a target rather than the shortest seen. The rate is measured, whatever bounds it: the
 * database, the pool, or the event loop when the process's CPU is the bottleneck; and, as BBR's bandwidth filter
 * does, it is the highest of the last `memoryMs`, not the last window's. A rate that falls because the process is
 * busy refusing must not lower the limit: it would refuse more, fall further, and stay there (measured: offered 0.85
 * of its sustainable GET rate, the service answered 5 % and refused the rest, where with no limit at all it answered
 * 30–70 %). A database slower for good lowers the limit once its faster past is `memoryMs` old.
 * An adaptive limit learnt from latency (Netflix's Gradient2, tried and measured) read the event loop's delay as the
 * database's and shrank to its floor under CPU load, which throttled the throughput it measured; a rate does not.
 *
 * Never below `floor`: a burst of clients, each waiting for its answer, queues briefly and is not refused.
 * Pure: the clock is given.
 */

export interface AdmissionOptions {
  /** The longest a request should be doing its database work, waits included. */
  readonly targetMs: number;
  /** The limit however slow the recent rate (an idle service, a burst). */
  readonly floor: number;
  /** How often the rate is measured. */
  readonly windowMs: number;
  /** How long a window's rate counts: the limit is set by the highest rate of this span. */
  readonly memoryMs: number;
}

export const ADMISSION_DEFAULTS: AdmissionOptions = { targetMs: 100, floor: 128, windowMs: 100, memoryMs: 10_000 };

export interface Admission {
  /** A turn (`true`), given back with `release()`; `false`: refused, over the limit. */
  acquire(): boolean;
  release(): void;
  /** For GET /metrics and tests. */
  readonly limit: number;
  readonly inFlight: number;
  readonly refused: number;
  /** Requests completed per second: the highest of the windows of the last `memoryMs`. */
  readonly rate: number;
}

export function createAdmission(options: AdmissionOptions, now: () => number): Admission {
  const { targetMs, floor, windowMs, memoryMs } = options;
  let inFlight = 0;
  let refused = 0;
  let rate = 0;
  let limit = floor;
  let windowStart = now();
  let completed = 0;
  // The rates of the windows remembered, with when each ended, oldest first (a hundred at most by default).
  const rates: number[] = [];
  const ends: number[] = [];

  /** A whole window's rate remembered, those older than `memoryMs` forgotten, and the limit from the highest. */
  function measure(at: number) {
    const elapsed = at - windowStart;
    if (elapsed < windowMs) return;
    rates.push((completed * 1000) / elapsed);
    ends.push(at);
    while ((ends[0] as number) <= at - memoryMs) {
      rates.shift();
      ends.shift();
    }
    rate = Math.max(...rates);
    limit = Math.max(floor, Math.ceil((rate * targetMs) / 1000));
    windowStart = at;
    completed = 0;
  }

  return {
    acquire() {
      measure(now());
      if (inFlight >= limit) {
        refused += 1;
        return false;
      }
      inFlight += 1;
      return true;
    },
    release() {
      inFlight -= 1;
      completed += 1;
    },
    get limit() {
      return limit;
    },
    get inFlight() {
      return inFlight;
    },
    get refused() {
      return refused;
    },
    get rate() {
      return rate;
    },
  };
}
