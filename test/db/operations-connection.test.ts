/**
 * The operations connection (src/db/connection.ts, contract §14: health, readiness and metrics keep answering under
 * overload). On a real server the statements of `/readyz` and of the metrics' figures go on a connection of their
 * own: the pool's queue is the driver's, first come first served, and a readiness check queued behind the requests'
 * work would time out and take a busy process out of its balancer. Here the pool (one connection) is held by a
 * request waiting on a lock and a second request waits behind it: `/readyz` still answers 200 and `/metrics` still
 * has the database's figures. (Queued on the pool, readiness gave up after 1.5 s with 503, and the figures after
 * 1 s.)
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import postgres from 'postgres';
import { OPERATIONS_APPLICATION_NAME } from '../../src/db/connection.ts';
import { createTestDatabase, REAL_SERVER_URL, TEST_PREPARE, type TestDatabase } from '../support/database.ts';
import { bearer, startTestServer, type Account, type TestServer } from '../support/server.ts';
import { until } from '../support/tools.ts';

describe('the operations connection', {
  skip:
    REAL_SERVER_URL === undefined
      ? 'needs a real PostgreSQL server (the embedded database takes one connection)'
      : false,
}, () => {
  let t: TestServer;
  let database: TestDatabase;
  let admin: Account;
  before(async () => {
    // No read replica, even in a run with one: the requests that wait on the lock must be the primary's.
    database = await createTestDatabase();
    t = await startTestServer({ DB_POOL_MAX: '1', DATABASE_URL: database.url }, database);
    admin = await t.user('admin');
  });
  after(async () => {
    await t?.close();
    await database?.drop();
  });

  it('answers /readyz and has the metrics figures while every pooled connection waits on a lock', async () => {
    const holder = postgres(t.database.url, { max: 1, onnotice: () => {}, prepare: TEST_PREPARE });
    const watcher = postgres(t.database.url, { max: 1, onnotice: () => {}, prepare: TEST_PREPARE });
    const reserved = await holder.reserve();
    let waiting: Promise<Response>[] = [];
    try {
      await reserved`BEGIN`;
      await reserved`LOCK TABLE orders IN ACCESS EXCLUSIVE MODE`;
      // One request holds the pool's connection, waiting on the lock; the next waits in the pool's queue.
      waiting = [t.fetch('/v1/orders?pageSize=1', { headers: bearer(admin.token) })];
      const blocked = async () =>
        (
          await watcher<{ n: number }[]>`
            SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock'`
        )[0]?.n === 1;
      await until(blocked, () => "the request's statement never waited on the lock");
      waiting.push(t.fetch('/v1/orders?pageSize=2', { headers: bearer(admin.token) }));

      const ready = await t.fetch('/readyz');
      assert.equal(ready.status, 200, await ready.clone().text());
      assert.deepEqual(await ready.json(), { status: 'ready' });
      const metrics = await t.fetch('/metrics');
      assert.equal(metrics.status, 200);
      assert.match(await metrics.text(), /^orders_metrics_database_success 1$/m);
      if (TEST_PREPARE) {
        // Named apart from the pool's (through a transaction-mode pooler a server session carries its last client's).
        const [operations] = await watcher<{ n: number }[]>`
          SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND application_name = ${OPERATIONS_APPLICATION_NAME}`;
        assert.equal(operations?.n, 1);
      }
    } finally {
      await reserved`ROLLBACK`;
      reserved.release();
      await Promise.all([holder.end(), watcher.end()]);
    }
    // Once the lock goes, the requests that waited are served.
    const answers = await Promise.all(waiting);
    assert.deepEqual(
      answers.map((a) => a.status),
      [200, 200],
    );
  });
});
