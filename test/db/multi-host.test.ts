/**
 * Several hosts in `DATABASE_URL`, as libpq takes them (contract §17; the
 * driver's patch 013), against a real primary and its streaming standby
 * (test/support/replica.ts): `read-write` and `primary` never settle for the
 * standby, listed first or not, on every connection of the pool and on
 * every reconnection; `read-only` and `standby` take it. The service starts
 * on such a URL with the standby first, and writes. And `/readyz` is not
 * ready while the server the writes go to cannot write, and says why.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDatabase, type Database } from '../../src/db/database.ts';
import { APPLICATION_NAME, OPERATIONS_APPLICATION_NAME } from '../../src/db/connection.ts';
import { healthRoutes, CANNOT_WRITE } from '../../src/ops/health.ts';
import type { RequestContext } from '../../src/pipeline/context.ts';
import { HttpError } from '../../src/http/problem.ts';
import { createTestDatabase, REAL_SERVER_URL, TEST_PREPARE } from '../support/database.ts';
import { REPLICA_MISSING, startReplicaPair, type ReplicaPair } from '../support/replica.ts';
import { bearer, startTestServer } from '../support/server.ts';
import { until } from '../support/tools.ts';

const DATABASE = 'orders_multi_host_test';

/** Where each of `count` connections of `db` is: in recovery (the standby) or not, and its port. */
async function where(db: Database, count: number): Promise<string[]> {
  const rows = await Promise.all(
    Array.from({ length: count }, () =>
      db.sql.unsafe<{ recovery: boolean; port: number }[]>(
        'SELECT pg_is_in_recovery() AS recovery, inet_server_port() AS port, pg_sleep(0.1)',
      ),
    ),
  );
  return rows.map(([row]) => (row?.recovery ? `standby:${row.port}` : `primary:${row?.port}`));
}

describe('several hosts with target_session_attrs (contract §17)', { skip: REPLICA_MISSING }, () => {
  let pair: ReplicaPair;
  const opened: Database[] = [];
  const ports = { primary: '', standby: '' };
  /** `standby,primary` (or the other order) with `attrs`. */
  const url = (attrs: string, first: 'standby' | 'primary' = 'standby') => {
    const [a, b] = first === 'standby' ? [ports.standby, ports.primary] : [ports.primary, ports.standby];
    return `postgres://postgres@127.0.0.1:${a},127.0.0.1:${b}/${DATABASE}?target_session_attrs=${attrs}`;
  };
  const open = async (databaseUrl: string, poolMax = 3) => {
    const db = await openDatabase({ databaseUrl, dataDir: '', poolMax, prepare: true });
    opened.push(db);
    return db;
  };

  before(async () => {
    pair = await startReplicaPair();
    await pair.createDatabase(DATABASE);
    ports.primary = new URL(pair.primaryUrl()).port;
    ports.standby = new URL(pair.standbyUrl()).port;
  });
  after(async () => {
    for (const db of opened) await db.close(0);
    await pair?.stop();
  });

  for (const attrs of ['read-write', 'primary']) {
    it(`${attrs}: every connection reaches the primary, the standby listed first`, async () => {
      const db = await open(url(attrs));
      assert.deepEqual(await where(db, 3), Array(3).fill(`primary:${ports.primary}`));
    });
  }

  it('read-write: a connection made again after its session ended reaches the primary again', async () => {
    const db = await open(url('read-write'), 1);
    assert.deepEqual(await where(db, 1), [`primary:${ports.primary}`]);
    const primary = await open(pair.primaryUrl(DATABASE), 1);
    await primary.sql.unsafe(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity ' +
        "WHERE application_name = 'orders' AND pid <> pg_backend_pid()",
    );
    await until(
      async () => (await where(db, 1).catch(() => [])).length === 1,
      () => 'the pool did not reconnect',
    );
    assert.deepEqual(await where(db, 1), [`primary:${ports.primary}`]);
  });

  for (const attrs of ['read-only', 'standby']) {
    it(`${attrs}: takes the standby, the primary listed first`, async () => {
      const db = await open(url(attrs, 'primary'));
      assert.deepEqual(await where(db, 2), Array(2).fill(`standby:${ports.standby}`));
    });
  }

  it('the service starts on read-write with the standby first: migrations and writes go to the primary', async () => {
    const t = await startTestServer({ DATABASE_URL: url('read-write'), RATE_LIMIT: 'off' }, undefined);
    try {
      const alice = await t.user('customer');
      const posted = await fetch(`${t.url}/v1/orders`, {
        method: 'POST',
        headers: { ...bearer(alice.token), 'content-type': 'application/json' },
        body: '{"items":[{"productId":1,"qty":2}]}',
      });
      assert.equal(posted.status, 201);
      assert.equal((await fetch(`${t.url}/readyz`)).status, 200);
    } finally {
      await t.close();
    }
  });
});

describe('/readyz and a server that cannot write (contract §17)', () => {
  const readyz = healthRoutes.find((r) => r.pattern === '/readyz');
  /** The handler's answer with a database that says `found`. */
  const answer = async (found: { recovery: boolean; read_only: boolean }) => {
    const ctx = { db: { one: async () => found }, services: {} } as unknown as RequestContext;
    try {
      return (await readyz?.handler(ctx))?.status;
    } catch (error) {
      return error instanceof HttpError ? `${error.status} ${error.message}` : error;
    }
  };

  it('is 503 with the reason for a standby, or a read-only server; 200 for a primary', async () => {
    assert.equal(await answer({ recovery: true, read_only: true }), `503 ${CANNOT_WRITE.standby}`);
    assert.equal(await answer({ recovery: false, read_only: true }), `503 ${CANNOT_WRITE.readOnly}`);
    assert.equal(await answer({ recovery: false, read_only: false }), 200);
  });

  it('on the real server: 503 once its sessions are read-only, ready again once they can write', {
    skip: REAL_SERVER_URL === undefined || !TEST_PREPARE ? 'needs a real server reached directly' : false,
  }, async () => {
    const database = await createTestDatabase();
    const t = await startTestServer({ RATE_LIMIT: 'off' }, database);
    const admin = await openDatabase({ databaseUrl: database.url, dataDir: '', poolMax: 1, prepare: true });
    const name = new URL(database.url).pathname.slice(1);
    /** Ends the service's sessions (its pool's and its operations connection's): new ones get the settings of now. */
    const renew = () =>
      admin.sql.unsafe(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity ' +
          'WHERE application_name IN ($2, $3) AND datname = $1 AND pid <> pg_backend_pid()',
        [name, APPLICATION_NAME, OPERATIONS_APPLICATION_NAME],
      );
    let last = '';
    const ready = async () => {
      const response = await fetch(`${t.url}/readyz`);
      const body = (await response.json()) as { detail?: string };
      last = `${response.status}${body.detail === undefined ? '' : ` ${body.detail}`}`;
      return last;
    };
    try {
      assert.equal(await ready(), '200');
      await admin.sql.unsafe(`ALTER DATABASE ${name} SET default_transaction_read_only = on`);
      await renew();
      await until(
        async () => (await ready()) === `503 ${CANNOT_WRITE.readOnly}`,
        () => `/readyz: ${last}`,
      );
      await admin.sql.unsafe(`ALTER DATABASE ${name} RESET default_transaction_read_only`);
      await renew();
      await until(
        async () => (await ready()) === '200',
        () => `/readyz: ${last}`,
      );
    } finally {
      await t.close();
      await admin.close(0);
      await database.drop();
    }
  });
});
