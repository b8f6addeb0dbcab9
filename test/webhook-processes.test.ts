/**
 * Webhook delivery across processes (contract §15), on the real PostgreSQL
 * server: a process killed mid-delivery leaves the delivery to the next one
 * (at least once, the same webhook-id), and two processes on one database
 * deliver each event once per endpoint.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { createToken } from '../src/auth/token-store.ts';
import { openDatabase, type Database } from '../src/db/database.ts';
import { migrate } from '../src/db/migrate.ts';
import { seed } from '../src/service/seed.ts';
import { createUser } from '../src/users/user-store.ts';
import { createTestDatabase, REAL_SERVER_URL, TEST_PREPARE, type TestDatabase } from './support/database.ts';
import { startService, type ServiceProcess } from './support/process.ts';
import { startReceiver } from './support/receiver.ts';
import { startTestServer } from './support/server.ts';

const ENTRY = 'test/support/fast-webhooks-main.ts';

describe('webhook delivery across processes', {
  skip: REAL_SERVER_URL ? false : 'needs a real PostgreSQL server',
}, () => {
  let database: TestDatabase;
  let db: Database;
  let token: string;
  let customerId: number;

  before(async () => {
    database = await createTestDatabase();
    db = await openDatabase({ databaseUrl: database.url, dataDir: '', poolMax: 2, prepare: TEST_PREPARE });
    await migrate(db);
    await seed(db);
    const admin = await createUser(db, { email: 'hooks-admin@example.com', name: 'Hooks', role: 'admin' });
    customerId = (await createUser(db, { email: 'hooks-customer@example.com', name: 'Customer', role: 'customer' })).id;
    token = (await createToken(db, admin.id, ['orders:write', 'webhooks:write'], null)).token;
  });
  after(async () => {
    await db.close();
    await database.drop();
  });

  const start = () =>
    startService(
      { DATABASE_URL: database.url, WEBHOOK_ALLOW_PRIVATE: '1', LOG_LEVEL: 'warn', RATE_LIMIT: 'off' },
      undefined,
      ENTRY,
    );
  const stop = async (service: ServiceProcess) => {
    if (service.process.exitCode !== null || service.process.signalCode !== null) return;
    service.process.kill('SIGTERM');
    await once(service.process, 'exit');
  };
  const post = (url: string, path: string, body: unknown) =>
    fetch(`${url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const pendingDeliveries = async (endpointId: number) =>
    (
      await db.sql<
        { n: number }[]
      >`SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = ${endpointId} AND status = 'pending'`
    )[0]!.n;

  it('a process killed mid-delivery leaves the delivery to the restarted one, with the same webhook-id', async () => {
    const receiver = await startReceiver((n) => (n === 1 ? null : 200));
    const first = await start();
    try {
      const endpoint = await (
        await post(first.url, '/v2/webhook-endpoints', { url: receiver.url, events: ['order.created'] })
      ).json();
      assert.equal(
        (await post(first.url, '/v1/orders', { customerId, items: [{ productId: 1, qty: 1 }] })).status,
        201,
      );
      const [hung] = await receiver.waitFor(1);
      first.process.kill('SIGKILL');
      await once(first.process, 'exit');
      const second = await start();
      try {
        const [, retried] = await receiver.waitFor(2);
        assert.equal(retried!.headers['webhook-id'], hung!.headers['webhook-id']);
        assert.equal(retried!.body, hung!.body);
        while ((await pendingDeliveries(endpoint.id)) > 0) await new Promise((resolve) => setImmediate(resolve));
        const [delivery] = await db.sql<
          { status: string; attempts: number }[]
        >`SELECT status, attempts FROM webhook_deliveries WHERE endpoint_id = ${endpoint.id}`;
        assert.deepEqual({ ...delivery }, { status: 'delivered', attempts: 2 });
      } finally {
        await stop(second);
      }
    } finally {
      await stop(first);
      await receiver.close();
    }
  });

  it('shutdown aborts an attempt in flight, records it, and leaves the delivery to retry', async () => {
    const receiver = await startReceiver(() => null);
    // A minute-long time-out: only the shutdown can end this attempt.
    const server = await startTestServer({ WEBHOOK_ALLOW_PRIVATE: '1' }, database, undefined, {
      pollMs: 20,
      leaseSeconds: 120,
      retryDelaysSeconds: [1],
      timeoutMs: 60_000,
    });
    try {
      const created = await server.fetch('/v2/webhook-endpoints', {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: receiver.url, events: ['order.created'] }),
      });
      const endpoint = await created.json();
      await server.fetch('/v1/orders', {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ customerId, items: [{ productId: 1, qty: 1 }] }),
      });
      await receiver.waitFor(1);
      await server.close();
      const [delivery] = await db.sql<{ status: string; attempts: number; error: string }[]>`
        SELECT d.status, d.attempts, a.error
        FROM webhook_deliveries d JOIN webhook_attempts a ON a.delivery_id = d.id WHERE d.endpoint_id = ${endpoint.id}`;
      assert.equal(delivery?.status, 'pending');
      assert.equal(delivery?.attempts, 1);
      assert.match(delivery?.error ?? '', /shutting down/);
    } finally {
      await server.close();
      await receiver.close();
    }
  });

  it('two processes on one database deliver each event once per endpoint', async (ctx) => {
    const receiver = await startReceiver();
    const [a, b] = await Promise.all([start(), start()]);
    try {
      const endpoint = await (
        await post(a.url, '/v2/webhook-endpoints', { url: receiver.url, events: ['order.created'] })
      ).json();
      const EVENTS = 40;
      await Promise.all(
        Array.from({ length: EVENTS }, (_, i) =>
          post(i % 2 ? a.url : b.url, '/v1/orders', { customerId, items: [{ productId: 1 + (i % 5), qty: 1 }] }),
        ),
      );
      await receiver.waitFor(EVENTS);
      while ((await pendingDeliveries(endpoint.id)) > 0) await new Promise((resolve) => setImmediate(resolve));
      const ids = receiver.received.map((r) => r.headers['webhook-id']);
      assert.equal(ids.length, EVENTS, 'no event delivered twice');
      assert.equal(new Set(ids).size, EVENTS);
      ctx.diagnostic(
        `${EVENTS} events, 2 processes: ${ids.length} deliveries, ${new Set(ids).size} distinct webhook-ids`,
      );
    } finally {
      await Promise.all([stop(a), stop(b)]);
      await receiver.close();
    }
  });
});
