/**
 * Rate limits shared through Redis (contract §10, §17): two servers count in
 * one window per user or address; the window's end is Redis's key expiry; a
 * Redis that stops answering, is down at start, or comes back costs a
 * request at most REDIS_TIMEOUT_MS and is logged once per outage.
 *
 * Against the Redis on 127.0.0.1:6379 (the machine's and CI's), in database 13
 * only, under a key prefix of this run's own, deleted afterwards; skipped when
 * nothing listens there.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import {
  REDIS_BACK,
  REDIS_IN_USE,
  REDIS_TIMEOUT_MS,
  REDIS_UNREACHABLE,
  type SharedLimitsStatus,
} from '../../src/limits/shared-limits.ts';
import { countInWindow, WINDOW_SCRIPT_SHA1 } from '../../src/limits/window-script.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { proxyToDatabase, startProxy, type DatabaseProxy, type TcpProxy } from '../support/proxy.ts';
import { startService } from '../support/process.ts';
import { bearer, startTestServer, type TestServer } from '../support/server.ts';
import { slack } from '../support/time.ts';

const REDIS_HOST = '127.0.0.1';
const REDIS_PORT = 6379;
/** This suite's logical database: never flushed, only this run's keys are deleted. */
const REDIS_DB = 13;
const REDIS_URL = `redis://${REDIS_HOST}:${REDIS_PORT}/${REDIS_DB}`;
/** This run's keys; each test adds a part of its own. */
const RUN_PREFIX = `test:orders:ratelimit:${randomUUID()}:`;
/** The scrapers' token of this file's servers. */
const METRICS_TOKEN = 'scrape-rate-limit-redis-0123';
/** What a request may take beyond the time-out: 150 ms times TIME_SLACK (test/support/time.ts), far under a retry's. */
const MARGIN_MS = slack(150);
const ROOT = new URL('../..', import.meta.url).pathname;

const redis = new Redis(REDIS_URL, {
  lazyConnect: true,
  retryStrategy: () => null,
  connectTimeout: 1_000,
  enableOfflineQueue: false,
});
redis.on('error', () => {});
/** One command, as the limiter sends it. */
const send = ([command, ...args]: string[]) => redis.call(command as string, ...args);
const skip = await redis.connect().then(
  () => false,
  (error: unknown) => `no Redis on ${REDIS_HOST}:${REDIS_PORT} (${String(error)}); the machine and CI run one there`,
);

after(async () => {
  if (skip === false)
    for (let cursor = '0', first = true; first || cursor !== '0'; first = false) {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${RUN_PREFIX}*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    }
  redis.disconnect();
});

let testNumber = 0;
/** A key prefix of one test's own. */
const newPrefix = () => `${RUN_PREFIX}${++testNumber}:`;

/** `"default";r=9;t=60` as [9, 60]. */
function rateLimit(response: Response): [number, number] {
  const match = /^"default";r=(\d+);t=(\d+)$/.exec(response.headers.get('ratelimit') ?? '');
  assert.ok(match, `RateLimit: ${response.headers.get('ratelimit')}`);
  return [Number(match[1]), Number(match[2])];
}

/** The log lines of `server` with `message`. */
const lines = (server: TestServer, message: string) => server.logs.filter((line) => line.message === message);

/** Resolves once `condition` holds, polling; fails after `ms` times TIME_SLACK (test/support/time.ts). */
async function until(condition: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = performance.now() + slack(ms);
  while (!condition()) {
    if (performance.now() > deadline) assert.fail(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The two series of GET /metrics that say how the shared limits go (a scrape is not counted against them). */
async function limitSeries(server: TestServer): Promise<{ processes: number; fallback: number }> {
  const text = await (
    await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
  ).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
  return {
    processes: value('orders_rate_limit_redis_processes'),
    fallback: value('orders_rate_limit_fallback_requests_total'),
  };
}

const statusOf = (server: TestServer): SharedLimitsStatus | undefined => server.server.sharedLimits?.status();

/** `fetch` with its time, and the server's log line of it. */
async function timed(server: TestServer, path: string, headers: Record<string, string> = {}) {
  const requestId = randomUUID();
  const started = performance.now();
  const response = await server.fetch(path, { headers: { ...headers, 'x-request-id': requestId } });
  await response.arrayBuffer();
  const ms = performance.now() - started;
  const line = server.logs.find((l) => l.requestId === requestId && l.message === 'request');
  return { response, ms, durationMs: Number(line?.durationMs) };
}

describe('rate limits shared through Redis', { skip }, () => {
  let database: TestDatabase;
  let link: DatabaseProxy;

  before(async () => {
    database = await createTestDatabase();
    // One database for every server of this file, embedded or real: a token made on one is valid on all.
    link = await proxyToDatabase(database, 12);
  });

  after(async () => {
    await link.close();
    await database.drop();
  });

  /** A server on the shared database, with `RATE_LIMIT=10/60`, counting in Redis under `prefix`. */
  const server = (prefix: string, redisUrl = REDIS_URL) =>
    startTestServer(
      // A scraper with the token is never counted (contract §13), so the scrapes below change no count.
      { DATABASE_URL: link.url, DB_POOL_MAX: '2', RATE_LIMIT: '10/60', REDIS_URL: redisUrl, METRICS_TOKEN },
      database,
      { redisKeyPrefix: prefix },
    );

  describe('two servers on one Redis', () => {
    let one: TestServer;
    let two: TestServer;
    let prefix: string;
    before(async () => {
      prefix = newPrefix();
      one = await server(prefix);
      two = await server(prefix);
    });
    after(async () => {
      await one.close();
      await two.close();
    });

    it('give one token exactly 10 requests across both, counting r down 9…0 alternately, then 429', async () => {
      const { token } = await one.user('customer');
      const seen: [number, number, number][] = [];
      for (let i = 0; i < 12; i++) {
        const response = await (i % 2 === 0 ? one : two).fetch('/v1/orders', { headers: bearer(token) });
        await response.arrayBuffer();
        seen.push([response.status, ...rateLimit(response)]);
        assert.equal(response.headers.get('ratelimit-policy'), '"default";q=10;w=60');
        if (response.status === 429) assert.equal(response.headers.get('retry-after'), String(seen[i]?.[2]));
      }
      assert.deepEqual(
        seen.map(([status, remaining]) => [status, remaining]),
        [...[9, 8, 7, 6, 5, 4, 3, 2, 1, 0].map((r) => [200, r]), [429, 0], [429, 0]],
      );
      for (const [, , reset] of seen) assert.ok(reset >= 59 && reset <= 60, `t=${reset}`);
      for (const s of [one, two]) assert.deepEqual(statusOf(s), { redisInUse: true, fallbackRequests: 0 });
      assert.equal(lines(one, REDIS_IN_USE).length, 1);
    });

    it('give one address exactly 10 requests across both, /metrics included; health checks stay exempt', async () => {
      const statuses: number[] = [];
      const remaining: number[] = [];
      for (let i = 0; i < 11; i++) {
        const response = await (i % 2 === 0 ? two : one).fetch('/v1/products');
        await response.arrayBuffer();
        statuses.push(response.status);
        remaining.push(rateLimit(response)[0]);
      }
      assert.deepEqual(statuses, [...Array(10).fill(200), 429]);
      assert.deepEqual(remaining, [9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0]);
      for (const path of ['/healthz', '/readyz']) {
        const response = await fetch(one.url + path);
        await response.arrayBuffer();
        assert.equal(response.status, 200, path);
        assert.equal(response.headers.get('ratelimit'), null, path);
      }
      // contract §13: without METRICS_TOKEN, a scrape is an anonymous request like any other.
      const scrape = await fetch(`${one.url}/metrics`);
      await scrape.arrayBuffer();
      assert.equal(scrape.status, 429);
      // The refusals before routing (404) count against the same shared address window.
      const refused = await two.fetch('/v1/nothing-here');
      assert.equal(refused.status, 429);
      assert.equal(rateLimit(refused)[0], 0);
      assert.equal(await redis.get(`${prefix}addresses:127.0.0.1`), '13');
    });
  });

  describe('the window', () => {
    let t: TestServer;
    let prefix: string;
    before(async () => {
      prefix = newPrefix();
      t = await server(prefix);
    });
    after(async () => {
      await t.close();
    });

    it("ends when Redis's key expires: t is the key's time to live, never more than the window", async () => {
      const { id, token } = await t.user('customer');
      const key = `${prefix}users:${id}`;
      const get = async () => {
        const response = await t.fetch('/v1/orders', { headers: bearer(token) });
        await response.arrayBuffer();
        return rateLimit(response);
      };
      assert.deepEqual(await get(), [9, 60]);
      const ttl = await redis.pttl(key);
      assert.ok(ttl > 59_000 && ttl <= 60_000, `PTTL ${ttl}`);
      // Redis's clock decides: a window with 4.2 s left says t=5, whatever this process measured.
      await redis.pexpire(key, 4_200);
      assert.deepEqual(await get(), [8, 5]);
      await redis.pexpire(key, 900);
      assert.deepEqual(await get(), [7, 1]);
      // The window ended (its key is gone): a new one, from this request.
      await redis.del(key);
      assert.deepEqual(await get(), [9, 60]);
      // A key some other hand left without an expiry is given one, so that it ends.
      await redis.persist(key);
      assert.deepEqual(await get(), [8, 60]);
      assert.ok((await redis.pttl(key)) > 59_000);
    });

    it('loads the script with EVAL when Redis does not know it (NOSCRIPT), EVALSHA otherwise', async () => {
      const sent: string[] = [];
      let first = true;
      const key = `${prefix}script`;
      const connection = {
        sendCommand(args: string[]) {
          sent.push(args[0] as string);
          // A server that lost its scripts: the first EVALSHA names one Redis has never seen.
          if (first) {
            first = false;
            return send(['EVALSHA', '0'.repeat(40), ...args.slice(2)]);
          }
          return send(args);
        },
      };
      assert.deepEqual(await countInWindow(connection, key, 60_000), { count: 1, msLeft: 60_000 });
      assert.deepEqual(sent, ['EVALSHA', 'EVAL']);
      assert.deepEqual(await send(['SCRIPT', 'EXISTS', WINDOW_SCRIPT_SHA1]), [1]);
      const again = await countInWindow(connection, key, 60_000);
      assert.equal(again.count, 2);
      assert.ok(again.msLeft > 0 && again.msLeft <= 60_000);
      assert.deepEqual(sent, ['EVALSHA', 'EVAL', 'EVALSHA']);
    });
  });

  describe('a Redis that stops answering (blackholed), then comes back', () => {
    let proxy: TcpProxy;
    let t: TestServer;
    let direct: TestServer;
    before(async () => {
      const prefix = newPrefix();
      proxy = await startProxy({ host: REDIS_HOST, port: REDIS_PORT });
      t = await server(prefix, `redis://127.0.0.1:${proxy.port}/${REDIS_DB}`);
      direct = await server(prefix);
    });
    after(async () => {
      await t.close();
      await direct.close();
      await proxy.close();
    });

    it('costs a request at most the time-out, falls back, logs once, and returns to Redis by itself', async () => {
      const { token } = await t.user('customer');
      const get = (s: TestServer) => timed(s, '/v1/orders', bearer(token));
      const first = await get(t);
      assert.deepEqual([first.response.status, rateLimit(first.response)[0]], [200, 9]);
      assert.deepEqual(statusOf(t), { redisInUse: true, fallbackRequests: 0 });

      proxy.blackhole();
      // Requests waiting on the connection when it goes silent: each waits at most the time-out.
      const burst = await Promise.all([get(t), get(t), get(t)]);
      for (const { response, ms } of burst) {
        assert.equal(response.status, 200);
        assert.ok(ms < REDIS_TIMEOUT_MS + MARGIN_MS, `answered in ${Math.round(ms)} ms`);
      }
      const waited = burst.map(({ durationMs }) => durationMs);
      assert.ok(Math.max(...waited) >= REDIS_TIMEOUT_MS - 1, `waited ${waited.join(', ')} ms`);
      // Counted in this process's own window, fresh: 9, 8, 7 in the order they were counted.
      assert.deepEqual(burst.map(({ response }) => rateLimit(response)[0]).sort(), [7, 8, 9]);
      // From then on no request waits for Redis.
      for (const expected of [6, 5]) {
        const { response, durationMs } = await get(t);
        assert.deepEqual([response.status, rateLimit(response)[0]], [200, expected]);
        assert.ok(durationMs < REDIS_TIMEOUT_MS, `waited ${durationMs} ms`);
      }
      assert.deepEqual(statusOf(t), { redisInUse: false, fallbackRequests: 5 });
      assert.deepEqual(await limitSeries(t), { processes: 0, fallback: 5 });
      const warned = lines(t, REDIS_UNREACHABLE);
      assert.equal(warned.length, 1);
      assert.equal(warned[0]?.level, 'warn');
      assert.match(JSON.stringify(warned[0]?.error), /no answer within 100 ms/);

      // Probes go on in the background (each a new connection, which the blackhole holds): no new line.
      const accepted = proxy.accepted;
      await until(() => proxy.accepted >= accepted + 2, 'two probes');
      const during = await get(t);
      assert.deepEqual([during.response.status, rateLimit(during.response)[0]], [200, 4]);
      assert.ok(during.durationMs < REDIS_TIMEOUT_MS, `waited ${during.durationMs} ms`);
      assert.equal(lines(t, REDIS_UNREACHABLE).length, 1);
      assert.equal(lines(t, REDIS_BACK).length, 0);

      await proxy.up();
      await until(() => lines(t, REDIS_BACK).length > 0, 'the return to Redis');
      const back = lines(t, REDIS_BACK);
      assert.equal(back.length, 1);
      assert.equal(back[0]?.level, 'info');
      assert.equal(back[0]?.fallbackRequests, 6);
      assert.deepEqual(statusOf(t), { redisInUse: true, fallbackRequests: 6 });
      assert.deepEqual(await limitSeries(t), { processes: 1, fallback: 6 });
      // Shared again: the window in Redis still holds the first request; the two servers go on from it.
      const counted: number[] = [];
      for (const s of [direct, t, direct]) {
        const { response } = await get(s);
        assert.equal(response.status, 200);
        counted.push(rateLimit(response)[0]);
      }
      assert.deepEqual(counted, [8, 7, 6]);
      assert.equal(lines(t, REDIS_UNREACHABLE).length, 1);
    });
  });

  describe('Redis down (connection refused) at start', () => {
    let proxy: TcpProxy;
    let t: TestServer;
    before(async () => {
      proxy = await startProxy({ host: REDIS_HOST, port: REDIS_PORT });
      await proxy.down();
      t = await server(newPrefix(), `redis://127.0.0.1:${proxy.port}/${REDIS_DB}`);
    });
    after(async () => {
      await t.close();
      await proxy.close();
    });

    it('starts, counts in this process, logs once, and uses Redis once it answers', async () => {
      const warned = lines(t, REDIS_UNREACHABLE);
      assert.equal(warned.length, 1);
      assert.match(JSON.stringify(warned[0]?.error), /ECONNREFUSED/);
      assert.equal(lines(t, REDIS_IN_USE).length, 0);
      const statuses: number[] = [];
      for (let i = 0; i < 11; i++) {
        const { response, durationMs } = await timed(t, '/v1/products');
        assert.ok(durationMs < REDIS_TIMEOUT_MS, `waited ${durationMs} ms`);
        statuses.push(response.status);
      }
      assert.deepEqual(statuses, [...Array(10).fill(200), 429]);
      assert.deepEqual(statusOf(t), { redisInUse: false, fallbackRequests: 11 });
      assert.equal(lines(t, REDIS_UNREACHABLE).length, 1);

      await proxy.up();
      await until(() => lines(t, REDIS_BACK).length > 0, 'the return to Redis');
      const { response } = await timed(t, '/v1/products');
      assert.deepEqual([response.status, rateLimit(response)[0]], [200, 9]);
      assert.deepEqual(statusOf(t), { redisInUse: true, fallbackRequests: 11 });
    });
  });
});

describe('the Redis client', { skip }, () => {
  /** Runs `code` (an ES module) in a new node with tsx, from the checkout; resolves with its stdout. */
  const run = async (code: string): Promise<string> => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: ROOT });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const [code_] = await once(child, 'exit');
    assert.equal(code_, 0, err);
    return out.trim();
  };
  const program = (env: Record<string, string>) => `
    import { createRequire } from 'node:module';
    import { loadConfig } from './src/config/config.ts';
    import { createLogger } from './src/base/logger.ts';
    import { startServer } from './src/service/server.ts';
    const config = loadConfig(${JSON.stringify({ PORT: '0', DATABASE_URL: 'memory:', RATE_LIMIT: '600/60', ...env })});
    const hooks = { redisKeyPrefix: '${RUN_PREFIX}' };
    const server = await startServer(config, { log: createLogger('silent'), hooks });
    const response = await fetch(server.url + '/v1/products');
    await response.arrayBuffer();
    const cache = createRequire(import.meta.url).cache;
    process.stdout.write(response.status + ' ' + Object.keys(cache).some((k) => k.includes('/node_modules/ioredis/')));
    await server.close();
  `;

  it('is never loaded by a process without REDIS_URL, and is loaded with it', async () => {
    assert.equal(await run(program({})), '200 false');
    assert.equal(await run(program({ REDIS_URL })), '200 true');
  });
});

describe('shutdown with REDIS_URL (contract §1: exits 0 within 1 s)', { skip }, () => {
  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase();
  });
  after(async () => {
    await database.drop();
    // The one key the services below counted in, under the default prefix (in this suite's database).
    await redis.del('orders:ratelimit:addresses:127.0.0.1');
  });

  const stops = async (redisUrl: string) => {
    const service = await startService({ DATABASE_URL: database.url, REDIS_URL: redisUrl, LOG_LEVEL: 'info' });
    try {
      const response = await fetch(`${service.url}/v1/products`);
      await response.arrayBuffer();
      assert.equal(response.status, 200);
      const exited = once(service.process, 'exit');
      const signalled = performance.now();
      service.process.kill('SIGTERM');
      const [code] = await exited;
      const elapsed = performance.now() - signalled;
      assert.equal(code, 0, service.stderr());
      // contract §1's 1 s times TIME_SLACK (test/support/time.ts): not an exit held by the Redis connection's retries.
      assert.ok(elapsed < slack(1_000), `exited ${Math.round(elapsed)} ms after SIGTERM`);
      assert.doesNotMatch(service.stderr(), /Unhandled|Error/);
      return service.stdout();
    } finally {
      if (service.process.exitCode === null) service.process.kill('SIGKILL');
    }
  };

  // Its one request is counted under the default prefix in database 13 (deleted after).
  it('while Redis is in use', async () => {
    const stdout = await stops(REDIS_URL);
    assert.match(stdout, new RegExp(REDIS_IN_USE));
  });

  it('while Redis is blackholed and being probed', async () => {
    const proxy = await startProxy({ host: REDIS_HOST, port: REDIS_PORT });
    proxy.blackhole();
    try {
      const stdout = await stops(`redis://127.0.0.1:${proxy.port}/${REDIS_DB}`);
      assert.match(stdout, new RegExp(REDIS_UNREACHABLE));
    } finally {
      await proxy.close();
    }
  });
});
