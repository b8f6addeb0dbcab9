/** The database's turns under overload (src/http/admission.ts): a limit from the completion rate, above a floor. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ADMISSION_DEFAULTS, type AdmissionOptions, createAdmission } from '../../src/http/admission.ts';

/** An admission on a clock the test moves by hand. */
function gate(options: Partial<AdmissionOptions> = {}) {
  let now = 0;
  const admission = createAdmission({ ...ADMISSION_DEFAULTS, ...options }, () => now);
  return {
    admission,
    advance(ms: number) {
      now += ms;
    },
    /** `n` requests asking for a turn now: how many got one. */
    take(n: number) {
      let got = 0;
      for (let i = 0; i < n; i += 1) if (admission.acquire()) got += 1;
      return got;
    },
    /** `n` turns given back. */
    give(n: number) {
      for (let i = 0; i < n; i += 1) admission.release();
    },
  };
}

describe('admission (contract §14)', () => {
  it('defaults to a 100 ms target and a floor of 128, measured every 100 ms', () => {
    assert.deepEqual(ADMISSION_DEFAULTS, { targetMs: 100, floor: 128, windowMs: 100 });
  });

  it('gives the floor at once, refuses the next one, and takes a turn given back', () => {
    const g = gate({ floor: 3 });
    assert.equal(g.take(3), 3);
    assert.equal(g.admission.inFlight, 3);
    assert.equal(g.admission.acquire(), false);
    assert.equal(g.admission.refused, 1);
    assert.equal(g.admission.inFlight, 3, 'a refusal holds no turn');
    g.give(1);
    assert.equal(g.admission.acquire(), true);
    assert.equal(g.admission.inFlight, 3);
  });

  it('sets the limit to the completion rate times the target, half from the last window', () => {
    const g = gate({ floor: 10, targetMs: 100, windowMs: 100 });
    // 100 ms in which 300 complete: 3,000 a second measured, averaged with the 0 before: 1,500; times 100 ms: 150.
    for (let i = 0; i < 300; i += 1) {
      assert.equal(g.admission.acquire(), true);
      g.admission.release();
    }
    g.advance(100);
    assert.equal(g.take(1), 1);
    assert.equal(g.admission.rate, 1_500);
    assert.equal(g.admission.limit, 150);
    // 150 in flight at most: the 151st of this window is refused.
    assert.equal(g.take(150), 149);
    assert.equal(g.admission.inFlight, 150);
    assert.equal(g.admission.acquire(), false);
  });

  it('falls back to the floor when the rate falls, by halves', () => {
    const g = gate({ floor: 10, targetMs: 100, windowMs: 100 });
    for (let i = 0; i < 800; i += 1) {
      g.admission.acquire();
      g.admission.release();
    }
    g.advance(100);
    g.take(1);
    g.give(1);
    assert.equal(g.admission.limit, 400);
    // Idle windows: 4,000 → 2,000 → 1,000 → 500 → 250 a second, limit 200, 100, 50, 25, then the floor.
    const limits: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      g.advance(100);
      g.take(1);
      g.give(1);
      limits.push(g.admission.limit);
    }
    // The take-and-give of each step completes one request too (10 a second over the window).
    assert.deepEqual(limits, [201, 101, 51, 26, 14]);
    g.advance(100);
    g.take(1);
    assert.equal(g.admission.limit, 10);
  });

  it('measures a window only once it is whole', () => {
    const g = gate({ floor: 5, targetMs: 100, windowMs: 100 });
    for (let i = 0; i < 100; i += 1) {
      g.admission.acquire();
      g.admission.release();
    }
    g.advance(99);
    g.take(1);
    assert.equal(g.admission.rate, 0);
    assert.equal(g.admission.limit, 5);
  });
});
