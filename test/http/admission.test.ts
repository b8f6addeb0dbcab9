/** Admission under overload (src/http/admission.ts): turns, the queue's two states, and the adaptive limit. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ADMISSION_DEFAULTS, type AdmissionOptions, createAdmission, Overloaded } from '../../src/http/admission.ts';

/** A clock and timers the test moves by hand. */
function fakeClock() {
  let now = 0;
  let next = 0;
  const timers = new Map<number, { at: number; callback: () => void }>();
  return {
    now: () => now,
    setTimeout(callback: () => void, ms: number) {
      next += 1;
      timers.set(next, { at: now + ms, callback });
      return next;
    },
    clearTimeout(timer: unknown) {
      timers.delete(timer as number);
    },
    /** Moves the clock by `ms`, firing each timer due on the way at its time. */
    advance(ms: number) {
      const end = now + ms;
      for (;;) {
        const due = [...timers.entries()].filter(([, t]) => t.at <= end).sort((a, b) => a[1].at - b[1].at)[0];
        if (due === undefined) break;
        timers.delete(due[0]);
        now = Math.max(now, due[1].at);
        due[1].callback();
      }
      now = end;
    },
    get pending() {
      return timers.size;
    },
  };
}

type Outcome = 'waiting' | 'admitted' | { refusedAfterMs: number };

/** Follows a turn's promise: `outcome()` once the microtasks have run (`settle()`). */
function follow(turn: true | Promise<true>, admitted: () => void = () => {}): () => Outcome {
  if (turn === true) {
    admitted();
    return () => 'admitted';
  }
  let outcome: Outcome = 'waiting';
  turn.then(
    () => {
      admitted();
      outcome = 'admitted';
    },
    (error: unknown) => {
      assert.ok(error instanceof Overloaded);
      outcome = { refusedAfterMs: error.waitedMs };
    },
  );
  return () => outcome;
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

function gateOf(options: Partial<AdmissionOptions> = {}) {
  const clock = fakeClock();
  const gate = createAdmission({ ...ADMISSION_DEFAULTS, initialLimit: 2, minLimit: 1, ...options }, clock);
  return { clock, gate };
}

describe('admission', () => {
  it('gives a turn at once, without a promise, while fewer than the limit hold one', () => {
    const { gate } = gateOf();
    assert.equal(gate.acquire(), true);
    assert.equal(gate.acquire(), true);
    const third = gate.acquire();
    assert.ok(third instanceof Promise);
    assert.deepEqual([gate.inFlight, gate.waiting, gate.limit], [2, 1, 2]);
  });

  it('serves a burst oldest first as turns come back', async () => {
    const { clock, gate } = gateOf();
    gate.acquire();
    gate.acquire();
    const waiting = [follow(gate.acquire()), follow(gate.acquire()), follow(gate.acquire())];
    clock.advance(10);
    gate.release(10);
    await settle();
    assert.deepEqual(
      waiting.map((w) => w()),
      ['admitted', 'waiting', 'waiting'],
    );
    gate.release(10);
    await settle();
    assert.deepEqual(
      waiting.map((w) => w()),
      ['admitted', 'admitted', 'waiting'],
    );
    assert.deepEqual([gate.inFlight, gate.waiting, gate.refused], [2, 1, 0]);
  });

  it('refuses a request of a burst that waited past the interval, by its timer, no turn given back', async () => {
    const { clock, gate } = gateOf({ intervalMs: 100, targetMs: 5 });
    gate.acquire();
    gate.acquire();
    const late = follow(gate.acquire());
    clock.advance(100);
    await settle();
    assert.equal(late(), 'waiting');
    clock.advance(1);
    await settle();
    assert.deepEqual(late(), { refusedAfterMs: 101 });
    assert.deepEqual([gate.inFlight, gate.waiting, gate.refused, clock.pending], [2, 0, 1, 0]);
  });

  it('under twice the load it serves: oldest first, then once delays persist newest first, waits bounded', async () => {
    const { clock, gate } = gateOf({ intervalMs: 100, targetMs: 5 });
    gate.acquire();
    gate.acquire();
    // One arrival a millisecond; a turn comes back every 2 ms (and goes to one waiting).
    const order: number[] = [];
    const waited = new Map<number, number>();
    const arrivals: (() => Outcome)[] = [];
    for (let t = 0; t < 400; t += 1) {
      const arrival = clock.now();
      arrivals.push(
        follow(gate.acquire(), () => {
          order.push(t);
          waited.set(t, clock.now() - arrival);
        }),
      );
      if (t % 2 === 1) gate.release(2);
      clock.advance(1);
      await settle();
    }
    const firstRefused = arrivals.findIndex((a) => typeof a() === 'object');
    // Served in order, arrival k at 2k ms: the oldest waiter is past 5 ms from 10 ms on, and the queue stands at
    // 110 ms, when arrivals 0-54 have been served and those after them waiting over 5 ms are refused.
    assert.equal(firstRefused, 55);
    const served = order.filter((i) => i < firstRefused);
    assert.deepEqual(
      served,
      [...served].sort((a, b) => a - b),
      'a burst is served oldest first',
    );
    // Once standing (after the switch's refusals): newest first, and a refused request waited at most the target.
    const late = arrivals.slice(300, 390).map((a) => a());
    assert.ok(
      late.every((o) => o === 'admitted' || (typeof o === 'object' && o.refusedAfterMs <= 6)),
      JSON.stringify(late),
    );
    const lateServed = order.filter((i) => i >= 300 && i < 390);
    assert.equal(lateServed.length, 45, 'one in two served, as turns come back');
    // Newest first: each served by the turn that comes back as it arrives (1: seen when its promise settles); oldest
    // first, each would wait for the ones before it, to the target.
    assert.deepEqual(new Set(lateServed.map((i) => waited.get(i))), new Set([1]));
    assert.ok(gate.waiting <= 6, `${gate.waiting} waiting: no more than the target's worth`);
    assert.deepEqual([gate.refused, gate.waiting], [198, 2]);
  });

  it('is a burst again once the queue has emptied', async () => {
    const { clock, gate } = gateOf({ intervalMs: 100, targetMs: 5 });
    gate.acquire();
    gate.acquire();
    const first = follow(gate.acquire());
    clock.advance(50);
    gate.release(50);
    await settle();
    assert.equal(first(), 'admitted');
    clock.advance(80);
    // The queue was empty 80 ms ago: this one may wait the interval, not the target.
    const second = follow(gate.acquire());
    clock.advance(60);
    await settle();
    assert.equal(second(), 'waiting');
    gate.release(60);
    await settle();
    assert.equal(second(), 'admitted');
  });

  it('refuses the oldest to make room when the queue is full', async () => {
    const { gate } = gateOf({ maxQueue: 3 });
    gate.acquire();
    gate.acquire();
    const waiting = [follow(gate.acquire()), follow(gate.acquire()), follow(gate.acquire())];
    const fourth = follow(gate.acquire());
    await settle();
    assert.deepEqual(
      waiting.map((w) => w()),
      [{ refusedAfterMs: 0 }, 'waiting', 'waiting'],
    );
    assert.equal(fourth(), 'waiting');
    assert.equal(gate.waiting, 3);
  });

  describe('the limit', () => {
    /** A window of demand at the limit: every turn taken at once, then given back over 100 ms, each held `heldMs`. */
    function saturate(gate: ReturnType<typeof gateOf>['gate'], clock: ReturnType<typeof fakeClock>, heldMs: number) {
      const n = Math.max(gate.limit, 20);
      for (let i = 0; i < n; i += 1) gate.acquire();
      for (let i = 0; i < n; i += 1) {
        clock.advance(100 / n);
        gate.release(heldMs);
      }
    }

    it('grows while the time a turn is held stays as it was, up to its maximum', async () => {
      const { clock, gate } = gateOf({ initialLimit: 20, maxLimit: 60 });
      for (let w = 0; w < 10; w += 1) saturate(gate, clock, 10);
      assert.equal(gate.limit, 20, 'the first ten windows only learn the usual time');
      const limits: number[] = [];
      for (let w = 0; w < 40; w += 1) {
        saturate(gate, clock, 10);
        limits.push(gate.limit);
      }
      assert.ok(
        limits.every((l, i) => i === 0 || l >= (limits[i - 1] as number)),
        `${limits}`,
      );
      assert.equal(limits.at(-1), 60);
      await settle();
    });

    it('shrinks when turns are held far longer than usual, down to its minimum', async () => {
      const { clock, gate } = gateOf({ initialLimit: 40, minLimit: 5 });
      for (let w = 0; w < 12; w += 1) saturate(gate, clock, 10);
      const before = gate.limit;
      // A window spans the end of one of these and the start of the next: the second is all slow.
      saturate(gate, clock, 40);
      saturate(gate, clock, 40);
      assert.ok(gate.limit < before, `${gate.limit} < ${before}`);
      for (let w = 0; w < 60; w += 1) saturate(gate, clock, 40);
      assert.equal(gate.limit, 5);
      await settle();
    });

    it('stays as it is while demand is under half of it', () => {
      const { clock, gate } = gateOf({ initialLimit: 40 });
      for (let w = 0; w < 30; w += 1) {
        for (let i = 0; i < 20; i += 1) {
          gate.acquire();
          clock.advance(5);
          gate.release(w < 15 ? 10 : 100);
        }
      }
      assert.equal(gate.limit, 40);
    });
  });
});
