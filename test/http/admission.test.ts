/** The database's turns under overload (src/http/admission.ts): a limit from the highest recent completion rate. */
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
  it('defaults to a 100 ms target and a floor of 128, measured every 100 ms, the highest of 10 s kept', () => {
    assert.deepEqual(ADMISSION_DEFAULTS, { targetMs: 100, floor: 128, windowMs: 100, memoryMs: 10_000 });
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

  it('sets the limit to the completion rate times the target', () => {
    const g = gate({ floor: 10, targetMs: 100, windowMs: 100 });
    // 100 ms in which 300 complete: 3,000 a second; times 100 ms: 300.
    for (let i = 0; i < 300; i += 1) {
      assert.equal(g.admission.acquire(), true);
      g.admission.release();
    }
    g.advance(100);
    assert.equal(g.take(1), 1);
    assert.equal(g.admission.rate, 3_000);
    assert.equal(g.admission.limit, 300);
    // 300 in flight at most: the 301st of this window is refused.
    assert.equal(g.take(300), 299);
    assert.equal(g.admission.inFlight, 300);
    assert.equal(g.admission.acquire(), false);
  });

  it('keeps the highest rate of the last 10 s, however low the rate since, then forgets it', () => {
    const g = gate({ floor: 10, targetMs: 100, windowMs: 100 });
    for (let i = 0; i < 800; i += 1) {
      g.admission.acquire();
      g.admission.release();
    }
    // Each step: a window in which one request completes (10 a second), as a process busy refusing completes few.
    const step = () => {
      g.advance(100);
      g.take(1);
      g.give(1);
    };
    step();
    assert.equal(g.admission.rate, 8_000);
    assert.equal(g.admission.limit, 800);
    for (let t = 200; t <= 10_000; t += 100) {
      step();
      assert.equal(g.admission.limit, 800, `at ${t} ms`);
    }
    // The busy window ended at 100 ms: 10 s later it is forgotten, and the windows since say 10 a second.
    step();
    assert.equal(g.admission.rate, 10);
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
