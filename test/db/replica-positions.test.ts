/**
 * Where principals last wrote (contract §17, read-your-writes): WAL positions
 * as numbers and as text that compares the same way, the process's own store,
 * and the Redis one (the machine's Redis, database 13, a key prefix of this
 * run's own), which keeps the highest position whatever order writes record
 * in, forgets it after its time, and answers "unknown" when Redis cannot.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { createLogger } from '../../src/base/logger.ts';
import { lsnKey, parseLsn, parseLsnKey } from '../../src/replica/lsn.ts';
import { localPositions, redisPositions, UNKNOWN } from '../../src/replica/positions.ts';
import { startProxy } from '../support/proxy.ts';
import { slack } from '../support/time.ts';

describe('WAL positions', () => {
  const cases: [string, bigint | undefined][] = [
    ['0/0', 0n],
    ['16/B374D848', 0x16b374d848n],
    ['FFFFFFFF/FFFFFFFF', 0xffffffffffffffffn],
    ['0/1', 1n],
    ['', undefined],
    ['16B374D848', undefined],
    ['1/2/3', undefined],
    ['123456789/0', undefined],
  ];
  for (const [text, value] of cases) {
    it(`reads ${JSON.stringify(text)} as ${value}`, () => {
      assert.equal(parseLsn(text), value);
    });
  }

  it('writes each as 16 hexadecimal digits that compare as the positions do', () => {
    const positions = [0n, 1n, 0xffn, 0x100n, 0x16b374d848n, 0x17000000000n, 0xffffffffffffffffn];
    const keys = positions.map(lsnKey);
    assert.deepEqual(keys, [...keys].sort());
    assert.deepEqual(keys.map(parseLsnKey), positions);
    assert.equal(lsnKey(0x16b374d848n), '00000016b374d848');
    assert.equal(parseLsnKey('16b374d848'), undefined);
  });
});

describe('localPositions()', () => {
  it('keeps the highest position for its time, then forgets it', async () => {
    let now = 0;
    const positions = localPositions(1_000, () => now);
    assert.equal(await positions.lookup(7), undefined);
    await positions.record(7, 50n);
    await positions.record(7, 40n);
    assert.equal(await positions.lookup(7), 50n);
    assert.equal(await positions.lookup(8), undefined);
    now = 999;
    assert.equal(await positions.lookup(7), 50n);
    now = 2_000;
    assert.equal(await positions.lookup(7), undefined);
    await positions.record(7, 10n);
    assert.equal(await positions.lookup(7), 10n);
  });
});

const REDIS_URL = 'redis://127.0.0.1:6379/13';
const redis = new Redis(REDIS_URL, { lazyConnect: true, retryStrategy: () => null, connectTimeout: 1_000 });
redis.on('error', () => {});
const skip = await redis.connect().then(
  () => false,
  () => 'no Redis on 127.0.0.1:6379; the machine and CI run one there',
);
const prefix = `test:orders:ryw:${randomUUID()}:`;
after(async () => {
  if (skip === false) {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
  }
  redis.disconnect();
});

describe('redisPositions()', { skip }, () => {
  const log = createLogger('silent');

  it('shares a position between processes, keeps the highest, and lets it expire', async () => {
    const one = await redisPositions({ url: REDIS_URL, ttlMs: 300, log, prefix });
    const two = await redisPositions({ url: REDIS_URL, ttlMs: 300, log, prefix });
    try {
      await one.record(1, 0x20n);
      assert.equal(await two.lookup(1), 0x20n);
      // A slower write that records later never lowers it.
      await two.record(1, 0x10n);
      assert.equal(await one.lookup(1), 0x20n);
      assert.equal(await redis.get(`${prefix}1`), '0000000000000020');
      assert.equal(await two.lookup(2), undefined);
      const ttl = await redis.pttl(`${prefix}1`);
      assert.ok(ttl > 0 && ttl <= 300, `${ttl} ms`);
      await new Promise((resolve) => setTimeout(resolve, 400));
      assert.equal(await two.lookup(1), undefined);
    } finally {
      one.close();
      two.close();
    }
  });

  it('answers unknown while Redis does not answer, and its own writes still from this process', async () => {
    const proxy = await startProxy({ host: '127.0.0.1', port: 6379 });
    const positions = await redisPositions({ url: `redis://127.0.0.1:${proxy.port}/13`, ttlMs: 5_000, log, prefix });
    try {
      await positions.record(3, 0x30n);
      assert.equal(await positions.lookup(3), 0x30n);
      proxy.blackhole();
      const started = performance.now();
      assert.equal(await positions.lookup(3), UNKNOWN);
      assert.equal(await positions.lookup(4), UNKNOWN);
      // 350 ms times TIME_SLACK (test/support/time.ts): not the seconds of waiting for a blackholed Redis.
      assert.ok(performance.now() - started < slack(350));
    } finally {
      positions.close();
      await proxy.close();
    }
  });
});
