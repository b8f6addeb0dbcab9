/**
 * contract §14, overload: how many requests do their database work at once, and what waits for a turn. Two standard
 * mechanisms together:
 *
 * - **An adaptive concurrency limit**, computed as Netflix's Gradient2 limit does (concurrency-limits): the average
 *   time a request holds its turn over a short window is compared with its long-run average; while the short one
 *   stays within `tolerance` times the long one the limit grows by its square root a window (probing for more),
 *   and past it the limit shrinks in proportion (down to half a window), smoothed. A database that slows down, or a
 *   pool that saturates, shows as the short average rising: the limit follows what the database does now, not a
 *   figure configured for another machine.
 * - **Adaptive LIFO with a controlled delay** for those waiting (CoDel's test of a delay that persists, with the
 *   adaptive LIFO of Facebook's "Fail at Scale"): until the oldest waiting request has been waiting more than
 *   `targetMs` for `intervalMs` on end, the queue is a burst, served oldest first, each request waiting at most
 *   `intervalMs`. From then until it empties it is standing (overload): served newest first — the requests whose
 *   clients most likely still wait — and every request that waited more than `targetMs` is refused at once (503
 *   with Retry-After), so that a refusal is fast and the queue never holds more than `targetMs` of work. A closed
 *   loop of more clients than turns keeps a queue that never empties but is never old: no refusal.
 *
 * Pure: the clock and the timer are given.
 */

export interface AdmissionOptions {
  /** The limit to begin with, and its bounds. */
  readonly initialLimit: number;
  readonly minLimit: number;
  readonly maxLimit: number;
  /** The longest a waiting request waits while the queue is a burst; a queue not empty for this long is standing. */
  readonly intervalMs: number;
  /** The longest a waiting request waits while the queue is standing. */
  readonly targetMs: number;
  /** Requests waiting at most; the oldest is refused to make room. */
  readonly maxQueue: number;
  /** How far the short average may rise above the long one before the limit shrinks (Gradient2's 1.5). */
  readonly tolerance: number;
  /** A window of the limit: at least this long and this many requests. */
  readonly windowMs: number;
  readonly windowRequests: number;
}

export const ADMISSION_DEFAULTS: AdmissionOptions = {
  initialLimit: 20,
  minLimit: 4,
  maxLimit: 500,
  intervalMs: 100,
  targetMs: 5,
  maxQueue: 1_000,
  tolerance: 1.5,
  windowMs: 100,
  windowRequests: 20,
};

/** What admission needs of its surroundings: a clock in ms, and a timer. */
export interface AdmissionClock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(timer: unknown): void;
}

/** A request refused a turn; `waitedMs` it waited first. */
export class Overloaded extends Error {
  constructor(readonly waitedMs: number) {
    super('the service is at capacity');
  }
}

interface Waiter {
  readonly since: number;
  readonly admit: () => void;
  readonly refuse: (error: Overloaded) => void;
}

export interface Admission {
  /**
   * A turn: `true` at once when there is one (no promise), else a promise of one that rejects with `Overloaded`.
   * Every turn taken is given back with `release()`.
   */
  acquire(): true | Promise<true>;
  /** Gives a turn back; `heldMs` how long it was held (the limit's sample). */
  release(heldMs: number): void;
  /** For GET /metrics. */
  readonly limit: number;
  readonly inFlight: number;
  readonly waiting: number;
  readonly refused: number;
}

export function createAdmission(options: AdmissionOptions, clock: AdmissionClock): Admission {
  const o = options;
  let limit = o.initialLimit;
  let inFlight = 0;
  let refused = 0;
  // The queue, oldest first: served from the front as a burst, from the back when standing; refused from the front.
  let queue: Waiter[] = [];
  let head = 0;
  let standing = false;
  // When the oldest waiter passed `targetMs`, with every oldest since past it too; `undefined`: not now.
  let aboveSince: number | undefined;
  let timer: unknown;
  // The limit's window and long-run average (an exponential average over about 600 windows, as Gradient2's).
  let windowStart = clock.now();
  let windowCount = 0;
  let windowSum = 0;
  let windowPeak = 0;
  let longAverage = 0;
  let windows = 0;

  const waiting = () => queue.length - head;
  const oldest = () => queue[head] as Waiter;

  /**
   * The queue's state at `now`. Standing once its oldest request has been waiting more than `targetMs` without a
   * break for `intervalMs` (CoDel's test: a delay that persists, not a burst's); a burst again once it empties.
   */
  function update(now: number) {
    if (waiting() === 0) {
      standing = false;
      aboveSince = undefined;
    } else if (!standing) {
      const crossed = oldest().since + o.targetMs;
      if (now <= crossed) aboveSince = undefined;
      else {
        aboveSince ??= crossed;
        if (now - aboveSince >= o.intervalMs) standing = true;
      }
    }
  }

  function refuse(waiter: Waiter, now: number) {
    refused += 1;
    waiter.refuse(new Overloaded(now - waiter.since));
  }

  function compact() {
    if (head === queue.length) {
      queue = [];
      head = 0;
    } else if (head > 1_024 && head * 2 > queue.length) {
      queue = queue.slice(head);
      head = 0;
    }
  }

  /** Refuses, oldest first, those that have waited longer than the queue's state allows. */
  function expire(now: number) {
    const bound = standing ? o.targetMs : o.intervalMs;
    while (head < queue.length && now - oldest().since > bound) {
      refuse(oldest(), now);
      queue[head] = undefined as unknown as Waiter;
      head += 1;
    }
    compact();
  }

  /** Hands free turns to those waiting: the oldest in a burst, the newest when standing. */
  function dispatch() {
    const now = clock.now();
    update(now);
    expire(now);
    while (inFlight < limit && waiting() > 0) {
      const waiter = standing ? (queue.pop() as Waiter) : (queue[head++] as Waiter);
      inFlight += 1;
      waiter.admit();
      compact();
    }
    update(now);
    arm(now);
  }

  /** A timer for the next change nothing else would notice while no turn comes back: an expiry, or the standing. */
  function arm(now: number) {
    if (timer !== undefined) {
      clock.clearTimeout(timer);
      timer = undefined;
    }
    if (waiting() === 0) return;
    const since = oldest().since;
    let at = since + (standing ? o.targetMs : o.intervalMs);
    if (!standing) at = Math.min(at, aboveSince === undefined ? since + o.targetMs : aboveSince + o.intervalMs);
    timer = clock.setTimeout(
      () => {
        timer = undefined;
        dispatch();
      },
      Math.max(1, at - now + 1),
    );
  }

  function sample(heldMs: number, now: number) {
    windowCount += 1;
    windowSum += heldMs;
    if (inFlight + 1 > windowPeak) windowPeak = inFlight + 1;
    if (windowCount < o.windowRequests || now - windowStart < o.windowMs) return;
    const short = windowSum / windowCount;
    windows += 1;
    // The first windows set the long average; then it moves by 2/(600+1) a window.
    longAverage =
      windows <= 10 ? longAverage + (short - longAverage) / windows : longAverage + (short - longAverage) * (2 / 601);
    // After a long rise the long average is pulled down towards the short one, so that the limit recovers.
    if (longAverage / short > 2) longAverage *= 0.95;
    // Not limited by demand: no evidence for a larger or smaller limit.
    if (windowPeak >= limit / 2 && windows > 10) {
      const gradient = Math.max(0.5, Math.min(1, (o.tolerance * longAverage) / short));
      const next = limit * gradient + Math.sqrt(limit);
      limit = Math.max(o.minLimit, Math.min(o.maxLimit, limit * 0.8 + next * 0.2));
    }
    windowStart = now;
    windowCount = 0;
    windowSum = 0;
    windowPeak = 0;
  }

  return {
    acquire() {
      if (inFlight < limit && waiting() === 0) {
        inFlight += 1;
        return true;
      }
      const now = clock.now();
      return new Promise<true>((resolve, reject) => {
        if (waiting() >= o.maxQueue) {
          refuse(queue[head] as Waiter, now);
          queue[head] = undefined as unknown as Waiter;
          head += 1;
        }
        queue.push({ since: now, admit: () => resolve(true), refuse: reject });
        dispatch();
      });
    },
    release(heldMs) {
      inFlight -= 1;
      const now = clock.now();
      sample(heldMs, now);
      if (waiting() > 0) dispatch();
    },
    get limit() {
      return Math.floor(limit);
    },
    get inFlight() {
      return inFlight;
    },
    get waiting() {
      return waiting();
    },
    get refused() {
      return refused;
    },
  };
}
