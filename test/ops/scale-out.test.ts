/**
 * The tested topology of contract §17, as docs/operations.md gives it: HAProxy
 * (round robin, `option httpchk GET /healthz`) → two server processes →
 * PgBouncer in transaction mode (`DB_PREPARE=off`) → PostgreSQL, with Redis
 * for the shared rate limits. Real programs, each on a free loopback port;
 * the service's processes are children started as `make run` starts one.
 *
 * Each guarantee is checked through it: migrations by two processes starting
 * at once, no acknowledged write lost under parallel load, token revocation
 * in every process within 2 s, monotonic metrics per instance (one of them
 * with `WORKERS=2`), one webhook attempt in flight per endpoint, health
 * checks never rate limited (the load balancer keeps both backends under a
 * flood), and one rate limit for the whole service.
 *
 * Redis: the machine's (and CI's) on 127.0.0.1:6379, in logical database 14,
 * which only this file uses, emptied when a topology starts.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import { CACHE_TTL_MS } from '../../src/auth/authenticator.ts';
import { createToken, revokeToken } from '../../src/auth/token-store.ts';
import { SCOPES } from '../../src/auth/tokens.ts';
import { openDatabase, type Database } from '../../src/db/database.ts';
import { readMigrations } from '../../src/db/migrate.ts';
import { seed } from '../../src/service/seed.ts';
import { createUser } from '../../src/users/store.ts';
import { createTestDatabase, REAL_SERVER_URL, TEST_PREPARE, type TestDatabase } from '../support/database.ts';
import { rawRequest } from '../support/http.ts';
import {
  CHECK_INTERVAL_MS,
  HAPROXY_MISSING,
  HAPROXY_TEMPLATE,
  startHaproxy,
  type Haproxy,
} from '../support/haproxy.ts';
import { PGBOUNCER_MISSING, PGBOUNCER_TEMPLATE, startPgBouncer, type PgBouncer } from '../support/pgbouncer.ts';
import { startService, type ServiceProcess } from '../support/process.ts';
import { startReceiver } from '../support/receiver.ts';
import { slack } from '../support/time.ts';
import { postThenGet } from '../support/write-load.ts';

/** This file's own logical database of the machine's Redis. */
const REDIS_URL = 'redis://127.0.0.1:6379/14';

const ROOT = new URL('../..', import.meta.url).pathname;
const SKIP =
  REAL_SERVER_URL === undefined
    ? 'needs a real PostgreSQL server (the embedded one serves one process)'
    : PGBOUNCER_MISSING || HAPROXY_MISSING;

interface Topology {
  readonly database: TestDatabase;
  readonly pooler: PgBouncer;
  /** The service's DATABASE_URL: through the pooler. */
  readonly pooled: string;
  readonly services: readonly ServiceProcess[];
  readonly balancer: Haproxy;
  /** A pool of the test's own, straight to PostgreSQL. */
  readonly db: Database;
  token(role: 'customer' | 'admin'): Promise<{ id: number; token: string; tokenId: number }>;
  close(): Promise<void>;
}

/** Empties this file's Redis database: no window of an earlier run (CI runs the suite several times) counts. */
async function emptyRedis(): Promise<void> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, retryStrategy: () => null, connectTimeout: 1_000 });
  redis.on('error', () => {});
  await redis.connect();
  try {
    await redis.flushdb();
  } finally {
    redis.disconnect();
  }
}

/**
 * Two processes of the service with `env` (and each its own `perService` too), started at once on a new
 * database, behind the pooler and HAProxy, sharing rate limits through Redis.
 */
async function startTopology(
  env: Record<string, string>,
  perService: readonly Record<string, string>[] = [{}, {}],
): Promise<Topology> {
  await emptyRedis();
  const database = await createTestDatabase();
  const pooler = await startPgBouncer(database.target as { host: string; port: number });
  const pooled = pooler.url(database.url);
  const common = {
    DATABASE_URL: pooled,
    DB_PREPARE: 'off',
    REDIS_URL,
    TRUST_PROXY: '127.0.0.1',
    LOG_LEVEL: 'info',
    WEBHOOK_ALLOW_PRIVATE: '1',
    ...env,
  };
  // Both at once: each runs the migrations at start.
  const started = await Promise.allSettled(perService.map((own) => startService({ ...common, ...own })));
  const services = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  let balancer: Haproxy | undefined;
  let db: Database | undefined;
  try {
    if (services.length < started.length)
      throw (started.find((s) => s.status === 'rejected') as PromiseRejectedResult).reason;
    balancer = await startHaproxy(services.map((s) => s.url));
    db = await openDatabase({ databaseUrl: database.url, dataDir: '', poolMax: 2, prepare: TEST_PREPARE });
    await seed(db);
  } catch (error) {
    // Nothing of a topology that could not start is left running (a child process would hold the run open).
    await balancer?.stop();
    await db?.close();
    await stopAll(services);
    await pooler.stop();
    await database.drop();
    throw error;
  }
  const ready = { balancer, db };
  let users = 0;
  return {
    database,
    pooler,
    pooled,
    services,
    balancer: ready.balancer,
    db: ready.db,
    async token(role) {
      users += 1;
      const db = ready.db;
      const user = await createUser(db, { email: `${role}${users}@scale-out.test`, name: `Scale ${users}`, role });
      const { token, record } = await createToken(db, user.id, SCOPES, null);
      return { id: user.id, token, tokenId: record.id };
    },
    async close() {
      await ready.balancer.stop();
      await stopAll(services);
      await ready.db.close();
      await pooler.stop();
      await database.drop();
    },
  };
}

/** Stops the service's processes (SIGTERM) and waits until they have exited. */
async function stopAll(services: readonly ServiceProcess[]): Promise<void> {
  await Promise.all(
    services.map(async (service) => {
      if (service.process.exitCode !== null) return;
      service.process.kill('SIGTERM');
      await once(service.process, 'exit');
    }),
  );
}

/** A GET through HAProxy (or of one instance) on a connection of its own. */
const get = (url: string, headers: Record<string, string> = {}) => rawRequest(url, { headers });

describe('the configurations docs/operations.md gives', () => {
  const operations = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
  it('are the ones these tests run, word for word', () => {
    assert.ok(operations.includes(`\`\`\`haproxy\n${HAPROXY_TEMPLATE}\`\`\``), 'the HAProxy configuration');
    assert.ok(operations.includes(`\`\`\`ini\n${PGBOUNCER_TEMPLATE}\`\`\``), 'the PgBouncer configuration');
  });
});

describe('HAProxy → two processes → PgBouncer (transaction mode) → PostgreSQL', { skip: SKIP }, () => {
  let top: Topology;
  before(async () => {
    // The second process is an instance of two workers (WORKERS=2).
    top = await startTopology({ RATE_LIMIT: 'off' }, [{}, { WORKERS: '2' }]);
  });
  after(async () => {
    await top?.close();
  });

  it('two processes starting at once applied each migration once, and left no lock behind', async () => {
    const direct = postgres(top.database.url, { max: 1, onnotice: () => {}, prepare: TEST_PREPARE });
    try {
      const rows = await direct<{ name: string }[]>`SELECT name FROM schema_migrations ORDER BY version`;
      assert.deepEqual(
        rows.map((row) => row.name),
        readMigrations().map((m) => m.name),
      );
      const [locks] = await direct<{ n: number }[]>`
        SELECT count(*)::int AS n FROM pg_locks
        WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`;
      assert.equal(locks?.n, 0);
    } finally {
      await direct.end();
    }
    // A later `migrate` through the pooler finds nothing to do, at once (it failed after 7.45 s before).
    const started = performance.now();
    const { stdout } = await promisify(execFile)(process.execPath, ['bin/orders.js', 'migrate'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: top.pooled, DATABASE_READ_URL: '', DB_PREPARE: 'off' },
    });
    assert.equal(stdout, '');
    // 1.7 s times TIME_SLACK (test/support/time.ts): not a migration stuck on a pooled advisory lock.
    assert.ok(performance.now() - started < slack(1_700));
  });

  it('no acknowledged write is lost: 6 clients through HAProxy, every 201 read back and in the database', async () => {
    const customer = await top.token('customer');
    const load = await postThenGet(top.balancer.url, customer.token, { loops: 6, each: 20, label: 'balanced' });
    assert.deepEqual(load.counts, { 'POST 201': 120, 'GET after 201: 200': 120 });
    const [row] = await top.db.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM orders WHERE customer_id = ${customer.id}`;
    assert.equal(row?.n, 120);
    // Both processes served: round robin.
    for (const service of top.services) assert.match(service.stdout(), /"method":"POST","path":"\/v1\/orders"/);
    // HAProxy's request log (option httplog), a line per request: the backend that served it, status and request.
    for (const name of ['orders1', 'orders2'])
      assert.match(
        top.balancer.log(),
        new RegExp(` orders orders/${name} [\\d/+-]+ 201 \\d+ .* "POST /v1/orders HTTP/1.1"`),
      );
  });

  it('a revoked token stops working in every process within 2 s', async () => {
    const customer = await top.token('customer');
    const auth = { authorization: `Bearer ${customer.token}` };
    // Each process has validated (and cached) the token; the second's other worker may not have.
    for (const service of top.services) assert.equal((await get(`${service.url}/v1/orders`, auth)).status, 200);
    assert.equal(await revokeToken(top.db, customer.tokenId), true);
    const revokedAt = performance.now();
    // The 2 s of the token cache, then at most 100 ms times TIME_SLACK (test/support/time.ts): not a cache kept longer.
    const bound = CACHE_TTL_MS + slack(100);
    const seen = await Promise.all(
      top.services.map(async (service) => {
        // Until the bound, 200 (a worker's cache) or 401; a 401 from one worker of WORKERS=2 says nothing of the
        // other's cache, so the poll goes on to the bound whatever it saw.
        const before = new Set<number>();
        while (performance.now() - revokedAt <= bound) {
          before.add((await get(`${service.url}/v1/orders`, auth)).status);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        // Past it, 401 from every worker: four requests, each on a connection of its own, which the cluster's
        // round robin hands to both workers.
        const after: number[] = [];
        for (let i = 0; i < 4; i++) after.push((await get(`${service.url}/v1/orders`, auth)).status);
        return { before: [...before].sort(), after };
      }),
    );
    for (const { before, after } of seen) {
      assert.deepEqual(
        before.filter((status) => status !== 200 && status !== 401),
        [],
      );
      assert.deepEqual(after, [401, 401, 401, 401]);
    }
  });

  it("each instance's /metrics is monotonic, WORKERS=2 too (Prometheus scrapes each instance)", async () => {
    const series = (text: string) =>
      new Map(
        [...text.matchAll(/^(orders_http_requests_total\{.*\}|process_cpu_seconds_total) (\S+)$/gm)].map((m) => [
          m[1] as string,
          Number(m[2]),
        ]),
      );
    for (const service of top.services) {
      let previous = new Map<string, number>();
      for (let i = 0; i < 12; i++) {
        // Some traffic between scrapes, and each scrape on a new connection: any worker may take it.
        await get(`${service.url}/v1/products/${(i % 3) + 1}`);
        const scrape = await fetch(`${service.url}/metrics`, { headers: { connection: 'close' } });
        assert.equal(scrape.status, 200);
        const now = series(await scrape.text());
        for (const [name, value] of previous)
          assert.ok((now.get(name) ?? -1) >= value, `${service.url} ${name}: ${value} then ${now.get(name)}`);
        previous = now;
      }
      // Every product read so far, by whichever worker: 4 of each of the three ids.
      assert.equal(previous.get('orders_http_requests_total{route="/products/{id}",method="GET",status="200"}'), 12);
    }
  });

  it('one webhook attempt in flight per endpoint, whichever process claims', async () => {
    const admin = await top.token('admin');
    // A receiver that never answers: each attempt holds its endpoint until the worker's time-out (10 s).
    const hung = await startReceiver(() => null);
    try {
      const created = await fetch(`${top.balancer.url}/v2/webhook-endpoints`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: hung.url, events: ['order.created'] }),
      });
      assert.equal(created.status, 201, await created.text());
      const customer = await top.token('customer');
      const load = await postThenGet(top.balancer.url, customer.token, { loops: 3, each: 1, label: 'hook' });
      assert.equal(load.counts['POST 201'], 3);
      await hung.waitFor(1);
      // Both processes poll every second; over three polls each, none may open a second attempt to it.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      assert.equal(hung.mostOpen, 1);
      assert.equal(hung.received.length, 1);
    } finally {
      await hung.close();
    }
  });
});

describe('one rate limit for the whole service, through HAProxy and Redis (contract §10, §17)', { skip: SKIP }, () => {
  let top: Topology;
  before(async () => {
    top = await startTopology({ RATE_LIMIT: '10/60' });
  });
  after(async () => {
    await top?.close();
  });

  it('one token gets exactly 10 answers across the two processes, counted down 9…0, then 429', async () => {
    const customer = await top.token('customer');
    const seen: string[] = [];
    for (let i = 0; i < 12; i++) {
      const answer = await get(`${top.balancer.url}/v1/orders`, { authorization: `Bearer ${customer.token}` });
      seen.push(`${answer.status} ${/;r=(\d+);/.exec(String(answer.headers.ratelimit ?? ''))?.[1]}`);
    }
    assert.deepEqual(seen, [...[9, 8, 7, 6, 5, 4, 3, 2, 1, 0].map((r) => `200 ${r}`), '429 0', '429 0']);
    // Round robin: both processes answered.
    for (const service of top.services) assert.match(service.stdout(), /"path":"\/v1\/orders","status":200/);
  });
});

describe('health checks under a flood, through HAProxy (contract §10)', { skip: SKIP }, () => {
  let top: Topology;
  before(async () => {
    top = await startTopology({ RATE_LIMIT: '10/60' });
  });
  after(async () => {
    await top?.close();
  });

  it('an address that spent its budget gets 429 from the service, and HAProxy keeps both backends up', async () => {
    // HAProxy's own checks come from 127.0.0.1, as does this client (its forwarded address).
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await get(`${top.balancer.url}/v1/products/1`)).status);
    assert.deepEqual(statuses, [...Array(10).fill(200), 429, 429]);
    // Ten check intervals later, both backends are still up, and clients still reach the service.
    const checks = await Promise.all(
      top.services.map(async (service) => {
        const seen = service.stdout().split('"path":"/healthz"').length;
        for (;;) {
          // Wait until each backend has answered at least 10 more checks (an event each, read from its log).
          if (service.stdout().split('"path":"/healthz"').length - seen >= 10) return;
          await new Promise((resolve) => setTimeout(resolve, CHECK_INTERVAL_MS));
        }
      }),
    );
    assert.equal(checks.length, 2);
    assert.deepEqual(await top.balancer.states(), { orders1: 'UP', orders2: 'UP' });
    const answer = await get(`${top.balancer.url}/healthz`);
    assert.equal(answer.status, 200);
    assert.equal((await get(`${top.balancer.url}/v1/products/1`)).status, 429);
    // Every check was answered 200, none counted or refused.
    for (const service of top.services) assert.doesNotMatch(service.stdout(), /"path":"\/healthz","status":(?!200)/);
  });
});
