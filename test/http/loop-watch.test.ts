/** The event loop's watch under overload (src/http/loop-watch.ts), on a clock and a timer the test moves by hand. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LOOP_WATCH_DEFAULTS, type LoopWatchOptions, watchLoop } from '../../src/http/loop-watch.ts';

/** A watch whose ticks the test fires: `tickAt(t)` is the timer firing at time t (late when the loop was busy). */
function watched(options: Partial<LoopWatchOptions> = {}) {
  let now = 0;
  let tick: (() => void) | undefined;
  let stopped = false;
  let period: number | undefined;
  const watch = watchLoop(
    { ...LOOP_WATCH_DEFAULTS, ...options },
    {
      now: () => now,
      every(ms, callback) {
        period = ms;
        tick = callback;
        return () => {
          stopped = true;
        };
      },
    },
  );
  return {
    watch,
    get period() {
      return period;
    },
    get stopped() {
      return stopped;
    },
    /** The clock at `t`, with no tick (the loop busy, or between ticks). */
    at(t: number) {
      now = t;
    },
    /** The tick firing at `t`. */
    tickAt(t: number) {
      now = t;
      tick?.();
    },
  };
}

describe('loop watch (contract §14)', () => {
  it('ticks every 10 ms; 20 ms late counts; three late in a row overload; 5 ms of a turn taken then', () => {
    assert.deepEqual(LOOP_WATCH_DEFAULTS, { tickMs: 10, targetMs: 20, budgetMs: 5, lateTicks: 3, calmMs: 200 });
    assert.equal(watched().period, 10);
  });

  it('is never saturated while the ticks come on time, however long a turn has run', () => {
    const w = watched();
    for (let t = 10; t <= 100; t += 10) w.tickAt(t);
    w.at(190);
    assert.equal(w.watch.overloaded, false);
    assert.equal(w.watch.saturated(), false);
  });

  it('takes one stall, however long, for no overload (a collection, a long statement of the embedded database)', () => {
    const w = watched();
    w.tickAt(10);
    w.tickAt(2_020);
    w.tickAt(2_030);
    w.tickAt(2_040);
    assert.equal(w.watch.overloaded, false);
    w.at(2_070);
    assert.equal(w.watch.saturated(), false);
  });

  it('is overloaded at the third late tick in a row, and not at two', () => {
    const w = watched();
    w.tickAt(10);
    w.tickAt(41); // 21 ms late
    w.tickAt(72);
    assert.equal(w.watch.overloaded, false);
    w.tickAt(82); // on time: the count starts again
    w.tickAt(113);
    w.tickAt(144);
    assert.equal(w.watch.overloaded, false);
    w.tickAt(175);
    assert.equal(w.watch.overloaded, true);
  });

  it('while overloaded, a turn is saturated past its first 5 ms, and a new turn has its budget again', () => {
    const w = watched();
    w.tickAt(10);
    for (const t of [41, 72, 103]) w.tickAt(t);
    assert.equal(w.watch.overloaded, true);
    w.at(103);
    assert.equal(w.watch.saturated(), false);
    w.at(108);
    assert.equal(w.watch.saturated(), false, 'at 5 ms: still its budget');
    w.at(109);
    assert.equal(w.watch.saturated(), true);
    // The next turn's tick: a new budget.
    w.tickAt(134);
    assert.equal(w.watch.saturated(), false);
  });

  it('is calm again after 200 ms of ticks within 10 ms of their time, and not before', () => {
    const w = watched();
    w.tickAt(10);
    for (const t of [41, 72, 103]) w.tickAt(t);
    let t = 103;
    // Ticks 12 ms late (within half the target) for 190 ms: still overloaded.
    for (; t < 103 + 22 * 9; ) {
      t += 22;
      w.tickAt(t);
    }
    assert.equal(w.watch.overloaded, true);
    // One 15 ms late: the calm starts again.
    t += 25;
    w.tickAt(t);
    const since = t;
    for (; t < since + 200; ) {
      t += 10;
      w.tickAt(t);
      if (t < since + 210) assert.equal(w.watch.overloaded, true, `at ${t}`);
    }
    t += 10;
    w.tickAt(t);
    assert.equal(w.watch.overloaded, false);
    w.at(t + 100);
    assert.equal(w.watch.saturated(), false);
  });

  it('stops its timer', () => {
    const w = watched();
    w.watch.stop();
    assert.equal(w.stopped, true);
  });
});
