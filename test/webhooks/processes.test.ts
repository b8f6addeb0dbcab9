/**
 * Webhook delivery across processes (contract §15, §17). On the database of
 * the run, statement by statement: the endpoint's lease, taken by the claim
 * and released, fenced, by the attempt's record. On the real PostgreSQL
 * server, with real processes: a process killed mid-delivery leaves the
 * delivery to the next one (at least once, the same webhook-id) once its
 * lease expires, two processes on one database deliver each event once per
 * endpoint, and three have one attempt in flight to an endpoint between them.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { createToken } from '../../src/auth/token-store.ts';
import { openDatabase, type Database } from '../../src/db/database.ts';
import { migrate } from '../../src/db/migrate.ts';
import { seed } from '../../src/service/seed.ts';
import { createUser } from '../../src/users/store.ts';
import type { WorkerOptions } from '../../src/webhooks/worker.ts';
import { createTestDatabase, REAL_SERVER_URL, TEST_PREPARE, type TestDatabase } from '../support/database.ts';
import { startService, type ServiceProcess } from '../support/process.ts';
import { startReceiver } from '../support/receiver.ts';
import { startTestServer } from '../support/server.ts';

const ENTRY = 'test/support/fast-webhooks-main.ts';

/** A row of ClaimDeliveries (the fields these tests read). */
interface Claimed {
  id: number;
  endpoint_id: number;
  attempts: number;
}

/** The endpoint's lease: who holds it (delivery, attempt), and whether it has not expired yet. */
const leaseOf = async (db: Database, endpointId: number) =>
  (
    await db.sql<{ delivery: number | null; attempt: number | null; live: boolean | null }[]>`
      SELECT lease_delivery_id AS delivery, lease_attempt AS attempt, lease_until > now() AS live
      FROM webhook_endpoints WHERE id = ${endpointId}`
  ).map((row) => ({ ...row }))[0];
const FREE = { delivery: null, attempt: null, live: null };
const claimed = (rows: Claimed[]) => rows.map(({ id, attempts }) => ({ id, attempts }));

describe('the endpoint lease, statement by statement', () => {
  let database: TestDatabase;
  let db: Database;
  let endpointId: number;
  let d1: number;
  let d2: number;
  let d3: number;

  before(async () => {
    database = await createTestDatabase();
    db = await openDatabase({ databaseUrl: database.url, dataDir: '', poolMax: 2, prepare: TEST_PREPARE });
    await migrate(db);
    const [endpoint] = await db.sql<{ id: number }[]>`INSERT INTO webhook_endpoints (url, events, secret)
      VALUES ('http://127.0.0.1:9/lease', '{order.deleted}', 'whsec_eA==') RETURNING id`;
    endpointId = endpoint!.id;
    const deliveries = await db.sql<{ id: number }[]>`
      WITH e AS (INSERT INTO events (type, data) SELECT 'order.deleted', '{}' FROM generate_series(1, 3) RETURNING id)
      INSERT INTO webhook_deliveries (endpoint_id, event_id) SELECT ${endpointId}, id FROM e ORDER BY id RETURNING id`;
    [d1, d2, d3] = deliveries.map((row) => row.id).sort((a, b) => a - b) as [number, number, number];
  });
  after(async () => {
    await db.close();
    await database.drop();
  });

  // As the worker calls them: as many as 10, a 60 s lease; a failed attempt, due again at once.
  const claim = async () => claimed(await db.many('ClaimDeliveries', [10, 60]));
  const record = (delivery: number, attempt: number) =>
    db.opt('RecordAttempt', [delivery, 500, null, 10, 'pending', 0, attempt]);
  const expire = async (delivery?: number) => {
    await db.sql`UPDATE webhook_endpoints SET lease_until = now() - interval '1 second' WHERE id = ${endpointId}`;
    if (delivery !== undefined)
      await db.sql`UPDATE webhook_deliveries SET next_attempt_at = now() - interval '1 second' WHERE id = ${delivery}`;
  };

  it('is taken with the claim of the head, and no claim takes the endpoint while it is held', async () => {
    assert.deepEqual(await leaseOf(db, endpointId), FREE);
    assert.deepEqual(await claim(), [{ id: d1, attempts: 1 }]);
    assert.deepEqual(await leaseOf(db, endpointId), { delivery: d1, attempt: 1, live: true });
    // Another process's claim: two more deliveries are due, but the endpoint is busy.
    assert.deepEqual(await claim(), []);
  });

  it('once expired, is free: the next claim takes it, and the late record releases nothing', async () => {
    await expire();
    assert.deepEqual(await claim(), [{ id: d2, attempts: 1 }]);
    assert.deepEqual(await leaseOf(db, endpointId), { delivery: d2, attempt: 1, live: true });
    // The attempt that outlived it: its delivery was not claimed again, so its result counts; the lease is d2's.
    assert.deepEqual(await record(d1, 1), { delivery_id: d1 });
    assert.deepEqual(await leaseOf(db, endpointId), { delivery: d2, attempt: 1, live: true });
    assert.deepEqual(await claim(), []);
  });

  it("is released by its holder's record, and the next claim takes the endpoint at once", async () => {
    assert.deepEqual(await record(d2, 1), { delivery_id: d2 });
    assert.deepEqual(await leaseOf(db, endpointId), FREE);
    // d3 has been due longest; d1 and d2 became due again when recorded.
    assert.deepEqual(await claim(), [{ id: d3, attempts: 1 }]);
    assert.deepEqual(await leaseOf(db, endpointId), { delivery: d3, attempt: 1, live: true });
  });

  it('held by a newer attempt of the same delivery, is not released by the older one', async () => {
    await expire(d3);
    assert.deepEqual(await claim(), [{ id: d3, attempts: 2 }]);
    assert.equal(await record(d3, 1), undefined);
    assert.deepEqual(await leaseOf(db, endpointId), { delivery: d3, attempt: 2, live: true });
    assert.deepEqual(await record(d3, 2), { delivery_id: d3 });
    assert.deepEqual(await leaseOf(db, endpointId), FREE);
  });
});

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
    token = (await createToken(db, admin.id, ['orders:write', 'users:write', 'webhooks:write'], null)).token;
  });
  after(async () => {
    await db.close();
    await database.drop();
  });

  /** A process of the service; `webhooks`: its worker's options over fast-webhooks-main.ts's. */
  const start = (webhooks?: Partial<Omit<WorkerOptions, 'allowPrivate'>>) =>
    startService(
      {
        DATABASE_URL: database.url,
        WEBHOOK_ALLOW_PRIVATE: '1',
        LOG_LEVEL: 'warn',
        RATE_LIMIT: 'off',
        ...(webhooks ? { FAST_WEBHOOKS: JSON.stringify(webhooks) } : {}),
      },
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

  it('a process killed mid-attempt holds its endpoint until the lease expires; another then attempts it', async () => {
    const receiver = await startReceiver((n) => (n === 1 ? null : 200));
    const [first, second] = await Promise.all([start(), start()]);
    try {
      // Stopped while the first claims, so that the first makes the attempt the test kills.
      second.process.kill('SIGSTOP');
      const endpoint = await (
        await post(first.url, '/v2/webhook-endpoints', { url: receiver.url, events: ['order.created'] })
      ).json();
      assert.equal(
        (await post(first.url, '/v1/orders', { customerId, items: [{ productId: 1, qty: 1 }] })).status,
        201,
      );
      const [hung] = await receiver.waitFor(1);
      // Then running beside the first, before and after the kill: only the lease keeps it off the endpoint.
      second.process.kill('SIGCONT');
      const deliveryId = Number((hung!.headers['webhook-id'] as string).replace(/^msg_/, ''));
      assert.deepEqual(await leaseOf(db, endpoint.id), { delivery: deliveryId, attempt: 1, live: true });
      const [lease] = await db.sql<{ untilMs: number }[]>`
        SELECT extract(epoch FROM lease_until)::float8 * 1000 AS "untilMs"
        FROM webhook_endpoints WHERE id = ${endpoint.id}`;
      first.process.kill('SIGKILL');
      await once(first.process, 'exit');
      const [, retried] = await receiver.waitFor(2);
      assert.equal(retried!.headers['webhook-id'], hung!.headers['webhook-id']);
      assert.equal(retried!.body, hung!.body);
      // Not before the killed attempt's lease ended (one clock: both on this machine; Date.now() is whole ms).
      assert.ok(
        retried!.at >= Math.floor(lease!.untilMs),
        `attempted again ${Math.floor(lease!.untilMs) - retried!.at} ms before the lease ended`,
      );
      while ((await pendingDeliveries(endpoint.id)) > 0) await new Promise((resolve) => setImmediate(resolve));
      const [delivery] = await db.sql<{ status: string; attempts: number; recorded: number[] }[]>`
        SELECT d.status, d.attempts,
               (SELECT array_agg(a.status ORDER BY a.id) FROM webhook_attempts a WHERE a.delivery_id = d.id) AS recorded
        FROM webhook_deliveries d WHERE d.endpoint_id = ${endpoint.id}`;
      // The killed attempt was never recorded; the second process's was, and released the endpoint.
      assert.deepEqual({ ...delivery }, { status: 'delivered', attempts: 2, recorded: [200] });
      assert.deepEqual(await leaseOf(db, endpoint.id), FREE);
      assert.equal(receiver.received.length, 2);
    } finally {
      second.process.kill('SIGCONT');
      await Promise.all([stop(first), stop(second)]);
      await receiver.close();
    }
  });

  it('three pools claiming at once take each endpoint once between them', async () => {
    const ENDPOINTS = 10;
    const ROUNDS = 20;
    const pools = await Promise.all(
      [1, 2, 3].map(() => openDatabase({ databaseUrl: database.url, dataDir: '', poolMax: 1, prepare: TEST_PREPARE })),
    );
    const ids = (
      await db.sql<{ id: number }[]>`INSERT INTO webhook_endpoints (url, events, secret)
        SELECT 'http://127.0.0.1:9/race' || n, '{order.deleted}', 'whsec_eA==' FROM generate_series(1, ${ENDPOINTS}) n
        RETURNING id`
    ).map((row) => row.id);
    try {
      await db.sql`
        WITH e AS (INSERT INTO events (type, data) SELECT 'order.deleted', '{}' FROM generate_series(1, 3) RETURNING id)
        INSERT INTO webhook_deliveries (endpoint_id, event_id) SELECT w, e.id FROM e, unnest(${ids}::bigint[]) w`;
      for (let round = 0; round < ROUNDS; round++) {
        await db.sql`UPDATE webhook_endpoints SET lease_until = NULL, lease_delivery_id = NULL, lease_attempt = NULL
          WHERE id = ANY (${ids}::bigint[])`;
        await db.sql`UPDATE webhook_deliveries SET next_attempt_at = now() - interval '1 second'
          WHERE endpoint_id = ANY (${ids}::bigint[])`;
        const claims = await Promise.all(pools.map((pool) => pool.many('ClaimDeliveries', [100, 60])));
        // Of these endpoints (a delivery an earlier test left due elsewhere may be claimed too).
        const endpoints = claims
          .flat()
          .map((row) => row.endpoint_id)
          .filter((id) => ids.includes(id));
        assert.deepEqual(
          endpoints.sort((a, b) => a - b),
          ids,
          `round ${round}: ${claims.map((c) => c.length).join(' + ')} claims`,
        );
      }
    } finally {
      await db.sql`DELETE FROM webhook_endpoints WHERE id = ANY (${ids}::bigint[])`;
      await Promise.all(pools.map((pool) => pool.close()));
    }
  });

  it('three processes have one attempt in flight to a hung endpoint between them, and serve another', async (ctx) => {
    // Short time-outs, so that the hung endpoint's attempts follow one another; the lease outlasts each.
    const timings = { timeoutMs: 400, leaseSeconds: 1 };
    const HUNG_DUE = 3;
    const ATTEMPTS = 1 + 3; // fast-webhooks-main.ts: three retries, 50 ms apart
    const HEALTHY_DUE = 5;
    const hung = await startReceiver(() => null);
    const healthy = await startReceiver();
    const services = await Promise.all([1, 2, 3].map(() => start(timings)));
    try {
      const hungId = (
        await (
          await post(services[0]!.url, '/v2/webhook-endpoints', { url: hung.url, events: ['user.created'] })
        ).json()
      ).id;
      const healthyId = (
        await (
          await post(services[1]!.url, '/v2/webhook-endpoints', { url: healthy.url, events: ['order.created'] })
        ).json()
      ).id;
      for (let n = 0; n < HUNG_DUE; n++) {
        const created = await post(services[n % 3]!.url, '/v1/users', {
          email: `hung${n}.${process.pid}@example.test`,
          name: 'Hung',
        });
        assert.equal(created.status, 201);
      }
      await hung.waitFor(1);
      for (let n = 0; n < HEALTHY_DUE; n++) {
        const created = await post(services[n % 3]!.url, '/v1/orders', {
          customerId,
          items: [{ productId: 1, qty: 1 }],
        });
        assert.equal(created.status, 201);
      }
      await healthy.waitFor(HEALTHY_DUE);
      while ((await pendingDeliveries(healthyId)) > 0) await new Promise((resolve) => setImmediate(resolve));
      // All delivered while the hung endpoint still had attempts to make (about 5 s of them in all).
      const hungSoFar = hung.received.length;
      assert.ok(hungSoFar < HUNG_DUE * ATTEMPTS, `the hung endpoint had had all ${hungSoFar} attempts`);

      await hung.waitFor(HUNG_DUE * ATTEMPTS);
      while ((await pendingDeliveries(hungId)) > 0) await new Promise((resolve) => setImmediate(resolve));
      assert.equal(hung.mostOpen, 1, 'attempts in flight at once to the hung endpoint, all processes together');
      assert.equal(hung.received.length, HUNG_DUE * ATTEMPTS);
      const perDelivery = new Map<string, number>();
      for (const r of hung.received) {
        const id = r.headers['webhook-id'] as string;
        perDelivery.set(id, (perDelivery.get(id) ?? 0) + 1);
      }
      assert.deepEqual([...perDelivery.values()], Array(HUNG_DUE).fill(ATTEMPTS));
      const states = async (endpointId: number) =>
        (
          await db.sql<{ status: string; attempts: number; recorded: number }[]>`
            SELECT d.status, d.attempts,
                   (SELECT count(*)::int FROM webhook_attempts a WHERE a.delivery_id = d.id) AS recorded
            FROM webhook_deliveries d WHERE d.endpoint_id = ${endpointId} ORDER BY d.id`
        ).map((row) => ({ ...row }));
      assert.deepEqual(
        await states(hungId),
        Array(HUNG_DUE).fill({ status: 'failed', attempts: ATTEMPTS, recorded: ATTEMPTS }),
      );
      assert.deepEqual(await leaseOf(db, hungId), FREE);
      assert.deepEqual(
        await states(healthyId),
        Array(HEALTHY_DUE).fill({ status: 'delivered', attempts: 1, recorded: 1 }),
      );
      assert.equal(healthy.received.length, HEALTHY_DUE);
      assert.equal(healthy.mostOpen, 1, 'one endpoint, one attempt at a time');
      // Which process made the hung endpoint's attempts (whichever claimed first once the last one ended).
      const hungDeliveries = new Set(
        (await db.sql<{ id: number }[]>`SELECT id FROM webhook_deliveries WHERE endpoint_id = ${hungId}`).map(
          (row) => row.id,
        ),
      );
      const byProcess = services.map(
        (service) =>
          service
            .stdout()
            .split('\n')
            .filter((line) => line.startsWith('{'))
            .map((line) => JSON.parse(line) as { message?: string; delivery?: number })
            .filter((line) => line.message === 'webhook attempt' && hungDeliveries.has(line.delivery as number)).length,
      );
      ctx.diagnostic(
        `${HUNG_DUE * ATTEMPTS} attempts to the hung endpoint, by process: ${byProcess.join(', ')}; ` +
          `at most ${hung.mostOpen} at once; the ${HEALTHY_DUE} healthy deliveries done ${hungSoFar} attempts in`,
      );
    } finally {
      await Promise.all(services.map(stop));
      await Promise.all([hung.close(), healthy.close()]);
    }
  });
});
