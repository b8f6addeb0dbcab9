/**
 * contract §14, overload: whether the event loop is saturated, so that a request can be refused before it costs
 * more. A server whose loop is saturated does not read its sockets while it works: the requests wait unread in them,
 * where no queue of the service's own can see or bound the wait, their clients give up, and the server then spends
 * itself on answers no one waits for. What shows it is the loop's delay (as Fastify's `under-pressure` and Node's
 * `monitorEventLoopDelay` read it): a timer due every `tickMs` fires late by as long as the loop was busy.
 *
 * - **Overloaded** once `lateTicks` ticks in a row came more than `targetMs` late: a delay that persists (CoDel's
 *   test), not one stall (a garbage collection, a long statement of the embedded database). Calm again once the
 *   ticks have come within half of `targetMs` for `calmMs` on end.
 * - **While overloaded, a turn of the loop is saturated once it has run `budgetMs`** since its tick: the requests it
 *   reads after that may be refused (the shedding stage decides whose), at a fraction of the cost of serving them, so
 *   each turn does little more than its budget of new work, a request waits in its socket about two turns at most,
 *   and those admitted are answered while their clients still wait. The tick starts a turn while turns last longer
 *   than `tickMs` (under overload they do); turns shorter than that share one tick's budget. Counting each turn's
 *   budget from its first request instead (a `setImmediate` marking the turn's end) was tried: no difference beyond
 *   the noise of `make bench-overload`.
 *
 * Pure: the clock and the timer are given.
 */

export interface LoopWatchOptions {
  /** The period of the timer whose lateness is the loop's delay. */
  readonly tickMs: number;
  /** The loop's delay that counts as late. */
  readonly targetMs: number;
  /** While overloaded, how long a turn of the loop takes new requests before it refuses the rest. */
  readonly budgetMs: number;
  /** Late ticks in a row that make the loop overloaded. */
  readonly lateTicks: number;
  /** How long the ticks come nearly on time before the loop is calm again. */
  readonly calmMs: number;
}

export const LOOP_WATCH_DEFAULTS: LoopWatchOptions = {
  tickMs: 10,
  targetMs: 20,
  budgetMs: 5,
  lateTicks: 3,
  calmMs: 200,
};

/** What the watch needs of its surroundings: a clock in ms, and a repeating timer that does not hold the process. */
export interface LoopClock {
  now(): number;
  /** Calls `tick` every `ms`; the function returned stops it. */
  every(ms: number, tick: () => void): () => void;
}

export interface LoopWatch {
  /** Whether the loop is overloaded and its current turn has run its budget: a request read now may be refused. */
  saturated(): boolean;
  /** Whether the loop is overloaded now. */
  readonly overloaded: boolean;
  stop(): void;
}

export function watchLoop(options: LoopWatchOptions, clock: LoopClock): LoopWatch {
  const o = options;
  let lastTick = clock.now();
  let streak = 0;
  let overloaded = false;
  let calmSince: number | undefined;
  const stop = clock.every(o.tickMs, () => {
    const now = clock.now();
    const late = now - lastTick - o.tickMs;
    lastTick = now;
    if (late > o.targetMs) {
      streak += 1;
      calmSince = undefined;
      if (streak >= o.lateTicks) overloaded = true;
      return;
    }
    streak = 0;
    if (!overloaded) return;
    if (late > o.targetMs / 2) {
      calmSince = undefined;
      return;
    }
    calmSince ??= now;
    if (now - calmSince >= o.calmMs) {
      overloaded = false;
      calmSince = undefined;
    }
  });
  return {
    saturated() {
      return overloaded && clock.now() - lastTick > o.budgetMs;
    },
    get overloaded() {
      return overloaded;
    },
    stop,
  };
}

let processWatch: LoopWatch | undefined;

/** The process's own event loop, watched once however many apps it serves (its timer never holds the process). */
export function processLoop(): LoopWatch {
  processWatch ??= watchLoop(LOOP_WATCH_DEFAULTS, {
    now: () => performance.now(),
    every(ms, tick) {
      const timer = setInterval(tick, ms);
      timer.unref();
      return () => clearInterval(timer);
    },
  });
  return processWatch;
}
