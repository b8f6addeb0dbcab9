/**
 * `WORKERS=2` (issue 7): two HTTP processes on one port, each on its own
 * pool; SIGTERM stops both and the primary exits 0. Real PostgreSQL only.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, REAL_SERVER_URL, type TestDatabase } from '../support/database.ts';
import { spawnService, startService } from '../support/process.ts';

describe('WORKERS=2', { skip: REAL_SERVER_URL ? false : 'needs a real PostgreSQL server' }, () => {
  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase();
  });
  after(async () => {
    await database.drop();
  });

  it('serves from two processes on one port and stops both on SIGTERM', async () => {
    const service = await startService(
      { DATABASE_URL: database.url, WORKERS: '2', LOG_LEVEL: 'info' },
      /listening on (http:\/\/\S+) \(database: postgres, 2 workers\)/,
    );
    const child = service.process;
    for (let i = 0; i < 20; i++) assert.equal((await fetch(`${service.url}/readyz`)).status, 200);
    const workers = new Set(
      [
        ...service
          .stdout()
          .matchAll(/"message":"listening","url":"[^"]+","database":"postgres","startupMs":\d+,"worker":(\d+)/g),
      ].map((m) => m[1]),
    );
    assert.equal(workers.size, 2);
    // contract §17: without REDIS_URL each worker counts its own windows, and the start-up log says so, once.
    const perProcess = service.stdout().match(/"message":"rate limits: counted per process \(no REDIS_URL\)"[^\n]*/g);
    assert.equal(perProcess?.length, 1);
    assert.match(perProcess?.[0] ?? '', /"workers":2,"instanceAllows":"up to 2 × 600 per 60 s"/);
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    assert.equal(code, 0);
  });

  it('stops with exit 1, without restarting, when the workers cannot start', async () => {
    const url = new URL(database.url);
    url.pathname = '/orders_no_such_database';
    const child = spawnService({ DATABASE_URL: url.toString(), WORKERS: '2' });
    const [code] = await once(child.process, 'exit');
    assert.equal(code, 1);
    assert.match(child.stderr(), /orders: cannot start: database "orders_no_such_database" does not exist/);
  });
});
