/**
 * The database going away and coming back (contract §1, §5): readiness and
 * requests answer 503 with Retry-After while it is gone, and the server
 * recovers by itself, without a restart, when it returns.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { until } from '../support/tools.ts';
import { createTestDatabase, REAL_SERVER_URL, TEST_PREPARE, type TestDatabase } from '../support/database.ts';
import { openDatabase, type Param } from '../../src/db/database.ts';
import { NOT_A_STANDBY, openReplica } from '../../src/replica/replica.ts';
import { createLogger } from '../../src/base/logger.ts';
import { proxyToDatabase, type DatabaseProxy, type TcpProxy } from '../support/proxy.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let database: TestDatabase;
let link: DatabaseProxy;
let proxy: TcpProxy;
let t: TestServer;

before(async () => {
  database = await createTestDatabase();
  link = await proxyToDatabase(database, 10);
  proxy = link.proxy;
  t = await startTestServer({ DATABASE_URL: link.url, DB_POOL_MAX: '3' }, database);
});

after(async () => {
  await t.close();
  await link.close();
  await database.drop();
});

describe('when the database goes away', () => {
  it('is ready before', async () => {
    assert.equal((await t.fetch('/readyz')).status, 200);
    assert.equal((await t.fetch('/v1/products/1')).status, 200);
  });

  it('answers /readyz with 503 unavailable and Retry-After, /healthz still 200', async () => {
    await proxy.down();
    const response = await t.fetch('/readyz');
    assert.equal(response.status, 503);
    assert.equal(response.headers.get('retry-after'), '5');
    assert.equal(response.headers.get('cache-control'), 'no-store');
    assert.equal((await response.json()).type, '/problems/unavailable');
    assert.equal((await t.fetch('/healthz')).status, 200);
  });

  it('answers a resource request with 503, never 500', async () => {
    const response = await t.fetch('/v1/products?pageSize=2');
    assert.equal(response.status, 503);
    assert.equal(response.headers.get('retry-after'), '5');
    const body = await response.json();
    assert.equal(body.type, '/problems/unavailable');
    assert.ok(!JSON.stringify(body).includes('ECONNREFUSED'));
  });

  it('recovers by itself when the database returns', async () => {
    await proxy.up();
    // Once the circuit has opened (three statements in a row failed to reach the database, as through a pooler), the
    // next probe finds the database back: within its backoff (at most 1 s), not necessarily at once.
    await until(
      async () => (await t.fetch('/readyz')).status === 200,
      () => '/readyz never answered 200 again',
      5_000,
    );
    const response = await t.fetch('/v1/products/1');
    assert.equal(response.status, 200);
    assert.equal((await response.json()).id, 1);
  });
});

describe('health checks under a spent rate limit (contract §10)', () => {
  let limited: TestServer;
  before(async () => {
    limited = await startTestServer({ DATABASE_URL: link.url, RATE_LIMIT: '3/60' }, database);
  });
  after(async () => {
    await limited.close();
  });

  it('answers /healthz and /readyz 200, with no rate-limit fields, to a refused address; counts none', async () => {
    const spent = [];
    for (let i = 0; i < 4; i++) spent.push((await limited.fetch('/v1/products/1')).status);
    assert.deepEqual(spent, [200, 200, 200, 429]);
    for (let i = 0; i < 20; i++) {
      for (const path of ['/healthz', '/readyz']) {
        const response = await limited.fetch(path);
        assert.equal(response.status, 200, path);
        assert.equal(response.headers.get('ratelimit'), null, path);
        assert.equal(response.headers.get('ratelimit-policy'), null, path);
      }
    }
    // The budget is where the refusal left it: the probes took none of it.
    const refused = await limited.fetch('/v1/products/1');
    assert.equal(refused.status, 429);
    assert.match(refused.headers.get('ratelimit') ?? '', /^"default";r=0;t=\d+$/);
  });

  it('answers /readyz 503 while the database is away, still not limited', async () => {
    await proxy.down();
    try {
      for (let i = 0; i < 5; i++) {
        const response = await limited.fetch('/readyz');
        assert.equal(response.status, 503);
        assert.equal(response.headers.get('ratelimit'), null);
      }
    } finally {
      await proxy.up();
    }
    // contract §17: back within a second of the database (the circuit's next probe, at most 1 s after the last).
    await until(
      async () => (await limited.fetch('/readyz')).status === 200,
      () => '/readyz did not answer 200 within 3 s of the database coming back',
      3_000,
    );
  });
});

describe('a DATABASE_READ_URL that reaches a primary (contract §17: after a failover, the old standby)', {
  skip: REAL_SERVER_URL === undefined ? 'needs a real PostgreSQL server' : false,
}, () => {
  it('serves no reads from it, and /readyz (200) says why', async () => {
    // The test database's own server is a primary, as the standby a failover promoted looks to its replica URL.
    const promoted = await startTestServer({ DATABASE_URL: database.url, DATABASE_READ_URL: database.url }, database);
    try {
      const response = await promoted.fetch('/readyz');
      assert.equal(response.status, 200);
      const { replica } = (await response.json()) as { replica?: Record<string, unknown> };
      assert.deepEqual(replica, { state: 'unreachable', reason: NOT_A_STANDBY });
      assert.equal((await promoted.fetch('/v1/products/1')).status, 200);
    } finally {
      await promoted.close();
    }
  });

  it('logs it once, with the reason, however many polls see it', async () => {
    const primary = await openDatabase({ databaseUrl: database.url, dataDir: '', poolMax: 1, prepare: TEST_PREPARE });
    let polls = 0;
    const counting = new Proxy(primary, {
      get: (target, key, receiver) =>
        key === 'one'
          ? (name: string, params?: readonly Param[]) => {
              if (name === 'CurrentWalPosition') polls += 1;
              return target.one(name as 'CurrentWalPosition', params as []);
            }
          : Reflect.get(target, key, receiver),
    });
    const lines: Record<string, unknown>[] = [];
    const log = createLogger('info', (line) => lines.push(JSON.parse(line) as Record<string, unknown>));
    const replica = await openReplica({
      url: database.url,
      primary: counting,
      maxLagSeconds: 5,
      poolMax: 1,
      prepare: TEST_PREPARE,
      log,
      pollMs: 5,
    });
    try {
      await until(
        async () => polls >= 5,
        () => `${polls} polls`,
        5_000,
      );
      assert.equal(replica.serves(undefined), false);
      assert.deepEqual(replica.status(), { state: 'unreachable', lagSeconds: undefined, reason: NOT_A_STANDBY });
      assert.deepEqual(
        lines.map((l) => [l.level, l.message, l.reason]),
        [['warn', 'read replica: unreachable, reads go to the primary', NOT_A_STANDBY]],
      );
    } finally {
      await replica.close();
      await primary.close();
    }
  });
});
