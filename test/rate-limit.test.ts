import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createRateLimiter, rateLimitField } from '../src/http/rate-limit.ts';

describe('createRateLimiter()', () => {
  it('allows `limit` requests per window, then refuses until the window resets', () => {
    let now = 0;
    const limiter = createRateLimiter({ limit: 3, windowSeconds: 60 }, () => now);
    assert.deepEqual(limiter.consume('a'), { allowed: true, remaining: 2, resetSeconds: 60 });
    now = 10_000;
    assert.deepEqual(limiter.consume('a'), { allowed: true, remaining: 1, resetSeconds: 50 });
    assert.deepEqual(limiter.consume('a'), { allowed: true, remaining: 0, resetSeconds: 50 });
    assert.deepEqual(limiter.consume('a'), { allowed: false, remaining: 0, resetSeconds: 50 });
    now = 59_500;
    assert.deepEqual(limiter.consume('a'), { allowed: false, remaining: 0, resetSeconds: 1 });
    now = 60_000;
    assert.deepEqual(limiter.consume('a'), { allowed: true, remaining: 2, resetSeconds: 60 });
  });

  it('counts each key apart', () => {
    const limiter = createRateLimiter({ limit: 1, windowSeconds: 1 }, () => 0);
    assert.equal(limiter.consume('a').allowed, true);
    assert.equal(limiter.consume('b').allowed, true);
    assert.equal(limiter.consume('a').allowed, false);
  });

  it('keeps its table bounded: 100,000 distinct clients leave at most 10,000 keys', () => {
    let now = 0;
    const limiter = createRateLimiter({ limit: 600, windowSeconds: 60 }, () => now);
    for (let i = 0; i < 100_000; i++) {
      now += 1;
      limiter.consume(`address:10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    }
    assert.equal(limiter.size, 10_000);
    // The newest clients are the ones kept.
    assert.equal(limiter.consume('address:10.1.134.159').remaining, 598);
  });

  it('states its policy', () => {
    assert.equal(createRateLimiter({ limit: 600, windowSeconds: 60 }).policy, '"default";q=600;w=60');
  });
});

describe('rateLimitField()', () => {
  it('renders remaining and reset', () => {
    assert.equal(rateLimitField({ allowed: true, remaining: 599, resetSeconds: 60 }), '"default";r=599;t=60');
  });
});
