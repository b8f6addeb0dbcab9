/**
 * The database going away and coming back (contract §1, §5): readiness and
 * requests answer 503 with Retry-After while it is gone, and the server
 * recovers by itself, without a restart, when it returns.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, type TestDatabase } from './support/database.ts';
import { proxyToDatabase, type DatabaseProxy, type TcpProxy } from './support/proxy.ts';
import { startTestServer, type TestServer } from './support/server.ts';

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
    assert.equal((await t.fetch('/readyz')).status, 200);
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
    assert.equal((await limited.fetch('/readyz')).status, 200);
  });
});
