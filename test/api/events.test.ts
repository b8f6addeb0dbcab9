/** Events and webhooks (contract §15) over HTTP, on the database of this run. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import postgres from 'postgres';
import { Webhook } from 'standardwebhooks';
import { REAL_SERVER_URL, TEST_PREPARE } from '../support/database.ts';
import { startReceiver } from '../support/receiver.ts';
import { bearer, startTestServer, type Account, type TestServer } from '../support/server.ts';
import { until } from '../support/tools.ts';

const FAST = { pollMs: 20, leaseSeconds: 2, retryDelaysSeconds: [0.05, 0.05, 0.05], timeoutMs: 1000 };

let t: TestServer;
let admin: Account;
let alice: Account;
let bob: Account;

before(async () => {
  t = await startTestServer({ WEBHOOK_ALLOW_PRIVATE: '1' }, undefined, undefined, FAST);
  admin = await t.user('admin');
  alice = await t.user('customer');
  bob = await t.user('customer');
});
after(async () => {
  await t.close();
});

const json = { 'content-type': 'application/json' };
const send = (method: string, path: string, who: Account, body?: unknown) =>
  t.fetch(path, {
    method,
    headers: { ...bearer(who.token), ...json },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
/**
 * Waits until every committed event is readable: an event becomes readable
 * once no transaction older than its own is still running (docs/events.md),
 * and on a real server the webhook worker's own short transactions can
 * briefly hold that back. The horizon is the whole server's, so a
 * transaction another test file holds open holds it back too: past 20 s the
 * wait fails, naming the transactions that were still running.
 */
async function readable(): Promise<void> {
  let holding: readonly unknown[] = [];
  await until(
    async () => {
      const [row] = await t.server.db.sql<
        { ready: boolean }[]
      >`SELECT coalesce(max(xid) < pg_snapshot_xmin(pg_current_snapshot()), true) AS ready FROM events`;
      if (row?.ready === true) return true;
      holding = await t.server.db.sql`
        SELECT datname, application_name, state, backend_xid::text, now() - xact_start AS running,
               left(query, 80) AS query
        FROM pg_stat_activity WHERE backend_xid IS NOT NULL ORDER BY xact_start LIMIT 5`;
      return false;
    },
    () => `events stay unreadable: transactions still running ${JSON.stringify(holding)}`,
    20_000,
  );
}

const events = async (who: Account, qs = '', wait = true) => {
  if (wait) await readable();
  const response = await t.fetch(`/v2/events${qs}`, { headers: bearer(who.token) });
  assert.equal(response.status, 200, await response.clone().text());
  return response.json();
};
const lastEventId = async () =>
  (await t.server.db.sql<{ id: number }[]>`SELECT coalesce(max(id), 0)::int AS id FROM events`)[0]!.id;

describe('the event log', () => {
  it('records every change of an order, in order, with its v2 representation', async () => {
    const start = await lastEventId();
    const created = await (await send('POST', '/v1/orders', alice, { items: [{ productId: 1, qty: 2 }] })).json();
    await send('PATCH', `/v1/orders/${created.id}`, alice, { items: [{ productId: 1, qty: 3 }] });
    await send('POST', '/v1/payments', alice, { orderId: created.id, amount: 37.5, currency: 'EUR' }).then(
      async (r) => {
        assert.equal(r.status, 400); // no Idempotency-Key: refused, so no event
      },
    );
    await t.fetch('/v1/payments', {
      method: 'POST',
      headers: { ...bearer(alice.token), ...json, 'idempotency-key': `ev-${created.id}` },
      body: JSON.stringify({ orderId: created.id, amount: 37.5, currency: 'EUR' }),
    });
    await send('PATCH', `/v1/orders/${created.id}`, admin, { status: 'shipped' });
    const other = await (await send('POST', '/v1/orders', alice, { items: [{ productId: 2, qty: 1 }] })).json();
    await send('DELETE', `/v1/orders/${other.id}`, alice);
    const body = await events(admin, `?after=${start}&pageSize=100`);
    const mine = body.data.filter((e: { data: { id?: number; orderId?: number; order?: { id: number } } }) =>
      [created.id, other.id].includes(e.data.id ?? e.data.orderId ?? e.data.order?.id ?? -1),
    );
    assert.deepEqual(
      mine.map((e: { type: string }) => e.type),
      [
        'order.created',
        'order.updated',
        'payment.succeeded',
        'order.status_changed',
        'order.status_changed',
        'order.created',
        'order.deleted',
      ],
    );
    assert.deepEqual(mine[0].data.total, { amount: '25.00', currency: 'EUR' });
    assert.equal('currency' in mine[0].data, false, 'v2: no top-level currency');
    assert.deepEqual(mine[1].data.total, { amount: '37.50', currency: 'EUR' });
    assert.deepEqual(mine[2].data.amount, { amount: '37.50', currency: 'EUR' });
    assert.deepEqual([mine[3].data.from, mine[3].data.to, mine[3].data.order.status], ['pending', 'paid', 'paid']);
    assert.deepEqual([mine[4].data.from, mine[4].data.to], ['paid', 'shipped']);
    assert.deepEqual(Object.keys(mine[0]), ['id', 'type', 'createdAt', 'data']);
  });

  it('records user.created', async () => {
    const start = await lastEventId();
    const user = await (
      await send('POST', '/v1/users', admin, { email: `ev${start}@example.com`, name: 'Evented' })
    ).json();
    const body = await events(admin, `?after=${start}&type=user.created`);
    assert.deepEqual(
      body.data.map((e: { data: { id: number } }) => e.data.id),
      [user.id],
    );
  });

  it('writes no event for a change that is refused or rolled back', async () => {
    const order = await (await send('POST', '/v1/orders', alice, { items: [{ productId: 1, qty: 1 }] })).json();
    const start = await lastEventId();
    assert.equal((await send('PATCH', `/v1/orders/${order.id}`, alice, { status: 'shipped' })).status, 409);
    assert.equal(
      (await send('PATCH', `/v1/orders/${order.id}`, alice, { items: [{ productId: 999999, qty: 1 }] })).status,
      422,
    );
    assert.equal(
      (await send('PATCH', `/v1/orders/${order.id}`, alice, { status: 'pending' })).status,
      200,
      'a no-op changes nothing',
    );
    assert.equal(await lastEventId(), start);
  });

  it('pages with after, pageSize and meta.next, and filters by type', async () => {
    const start = await lastEventId();
    for (let i = 0; i < 3; i++) await send('POST', '/v1/orders', alice, { items: [{ productId: 1, qty: 1 }] });
    const first = await events(admin, `?after=${start}&pageSize=2`);
    assert.equal(first.data.length, 2);
    assert.deepEqual(first.meta, { pageSize: 2, after: start, next: first.data[1].id });
    const second = await events(admin, `?after=${first.meta.next}&pageSize=2`);
    assert.equal(second.data.length, 1);
    assert.ok(second.data[0].id > first.data[1].id);
    const empty = await events(admin, `?after=${second.meta.next}`);
    assert.deepEqual(empty.data, []);
    assert.equal(empty.meta.next, second.meta.next, 'an empty page keeps the cursor');
    assert.ok(
      (await events(admin, '?type=order.deleted&pageSize=100')).data.every(
        (e: { type: string }) => e.type === 'order.deleted',
      ),
    );
  });

  it('shows a customer only the events of their own resources', async () => {
    const theirs = await (await send('POST', '/v1/orders', bob, { items: [{ productId: 1, qty: 1 }] })).json();
    const mine = await (await send('POST', '/v1/orders', alice, { items: [{ productId: 1, qty: 1 }] })).json();
    const seen = (await events(alice, '?pageSize=100&type=order.created')).data.map(
      (e: { data: { id: number; customerId: number } }) => e.data,
    );
    assert.ok(seen.some((o: { id: number }) => o.id === mine.id));
    assert.ok(seen.every((o: { customerId: number }) => o.customerId === alice.id));
    assert.ok(!seen.some((o: { id: number }) => o.id === theirs.id));
    const bobsEvent = (await events(bob, '?pageSize=100')).data.at(-1).id;
    const response = await t.fetch(`/v2/events?after=${bobsEvent}`, { headers: bearer(alice.token) });
    assert.equal(response.status, 400, "another customer's event is no cursor for them");
  });

  it('answers 400 invalid-query for anything undocumented', async () => {
    for (const [qs, parameters] of [
      ['?page=2', ['page']],
      ['?sort=id', ['sort']],
      ['?after=abc', ['after']],
      ['?type=order.paid', ['type']],
      ['?pageSize=0', ['pageSize']],
      ['?after=1&after=2', ['after']],
      ['?x=1&type=', ['x', 'type']],
      ['?after=999999999', ['after']],
    ] as const) {
      const response = await t.fetch(`/v2/events${qs}`, { headers: bearer(admin.token) });
      assert.equal(response.status, 400, qs);
      assert.deepEqual(
        (await response.json()).errors.map((e: { parameter: string }) => e.parameter),
        parameters,
        qs,
      );
    }
  });

  it('needs events:read', async () => {
    const limited = await t.user('customer', ['orders:read']);
    const response = await t.fetch('/v2/events', { headers: bearer(limited.token) });
    assert.equal(response.status, 403);
    assert.equal(response.headers.get('www-authenticate'), 'Bearer error="insufficient_scope", scope="events:read"');
  });

  // Its own time-out, shorter than the file's: a wait that never ends names this test (the file timed out once
  // through PgBouncer under CI's load, after this test began; not seen in six runs alone).
  it('never lets a late-committing event fall behind a reader', {
    skip: REAL_SERVER_URL ? false : 'needs a real PostgreSQL server (the embedded one runs one transaction at a time)',
    timeout: 60_000,
  }, async () => {
    // An order whose order.created event the late one copies: its data is a real order (the contract check reads it).
    await send('POST', '/v1/orders', admin, { customerId: alice.id, items: [{ productId: 1, qty: 1 }] });
    const start = await lastEventId();
    // Readable first: the horizon is the server's, and another file's transaction (in its own database) may hold
    // it back; once past `start` it stays past, whatever this test then holds open (it failed once in CI so).
    await readable();
    const raw = postgres(t.database.url, { max: 1, onnotice: () => {}, prepare: TEST_PREPARE });
    try {
      const reserved = await raw.reserve();
      await reserved`BEGIN`;
      // An event written by a transaction that is still running…
      const [late] = await reserved`
        INSERT INTO events (type, customer_id, data)
        SELECT type, customer_id, data FROM events WHERE id = ${start} RETURNING id`;
      // …and one written and committed after it.
      await send('POST', '/v1/orders', admin, { customerId: alice.id, items: [{ productId: 1, qty: 1 }] });
      const during = await events(admin, `?after=${start}`, false);
      assert.deepEqual(during.data, [], 'nothing is returned past a transaction still running');
      await reserved`COMMIT`;
      reserved.release();
      const afterCommit = await events(admin, `?after=${start}`);
      assert.deepEqual(
        afterCommit.data.map((e: { id: string | number }) => String(e.id) === String(late?.id)),
        [true, false],
        'the late event first, then the other',
      );
    } finally {
      // At once: a failure above leaves the reserved connection held, and end() would wait for it for ever.
      await raw.end({ timeout: 0 });
    }
  });
});

describe('webhook endpoints', () => {
  it('creates an endpoint and shows its secret once', async () => {
    const response = await send('POST', '/v2/webhook-endpoints', admin, {
      url: 'http://127.0.0.1:9/hooks',
      events: ['order.created'],
    });
    assert.equal(response.status, 201);
    const created = await response.json();
    assert.match(created.secret, /^whsec_[A-Za-z0-9+/]+=*$/);
    assert.equal(response.headers.get('location'), `/v2/webhook-endpoints/${created.id}`);
    const fetched = await (await send('GET', `/v2/webhook-endpoints/${created.id}`, admin)).json();
    assert.deepEqual(fetched, {
      id: created.id,
      url: 'http://127.0.0.1:9/hooks',
      events: ['order.created'],
      createdAt: created.createdAt,
    });
    const list = await (await send('GET', '/v2/webhook-endpoints', admin)).json();
    assert.ok(list.data.every((e: Record<string, unknown>) => !('secret' in e)));
    assert.equal((await send('DELETE', `/v2/webhook-endpoints/${created.id}`, admin)).status, 204);
    assert.equal((await send('DELETE', `/v2/webhook-endpoints/${created.id}`, admin)).status, 404);
    assert.equal((await send('GET', `/v2/webhook-endpoints/${created.id}`, admin)).status, 404);
  });

  it('refuses customers, bad URLs and unknown event types', async () => {
    const customer = await t.user('customer', ['webhooks:write']);
    assert.equal(
      (await send('POST', '/v2/webhook-endpoints', customer, { url: 'http://127.0.0.1:9/', events: ['order.created'] }))
        .status,
      403,
    );
    for (const [body, pointer] of [
      [{ url: 'ftp://127.0.0.1/', events: ['order.created'] }, '/url'],
      [{ url: 'not a url', events: ['order.created'] }, '/url'],
      [{ url: 'http://user:pw@127.0.0.1/', events: ['order.created'] }, '/url'],
      [{ url: 'http://127.0.0.1/', events: [] }, '/events'],
      [{ url: 'http://127.0.0.1/', events: ['order.paid'] }, '/events/0'],
      [{ url: 'http://127.0.0.1/', events: ['order.created'], secret: 'mine' }, '/secret'],
    ] as const) {
      const response = await send('POST', '/v2/webhook-endpoints', admin, body);
      assert.equal(response.status, 422, JSON.stringify(body));
      assert.deepEqual(
        (await response.json()).errors.map((e: { pointer: string }) => e.pointer),
        [pointer],
      );
    }
  });

  it('stores the target in normal form', async () => {
    const created = await (
      await send('POST', '/v2/webhook-endpoints', admin, {
        url: ' HTTP://127.0.0.1:9/Hooks ',
        events: ['order.created'],
      })
    ).json();
    assert.equal(created.url, 'http://127.0.0.1:9/Hooks');
    await send('DELETE', `/v2/webhook-endpoints/${created.id}`, admin);
  });

  it('refuses private and loopback targets unless WEBHOOK_ALLOW_PRIVATE=1', async () => {
    const strict = await startTestServer({ WEBHOOK_ALLOW_PRIVATE: '0' });
    try {
      const root = await strict.user('admin');
      for (const url of [
        'http://127.0.0.1:8080/',
        'http://localhost/',
        'http://10.0.0.7/',
        'http://[::1]/',
        'http://169.254.169.254/latest',
        'http://[::ffff:192.168.1.1]/',
        'http://2130706433/',
        'http://0x7f.1/',
        'http://[::7f00:1]/',
        'http://[64:ff9b::7f00:1]/',
        'http://[2002:7f00:1::]/',
        'http://[fec0::1]/',
        'http://[2001::1]/',
      ]) {
        const response = await strict.fetch('/v2/webhook-endpoints', {
          method: 'POST',
          headers: { ...bearer(root.token), ...json },
          body: JSON.stringify({ url, events: ['order.created'] }),
        });
        assert.equal(response.status, 422, url);
        assert.equal(
          (await response.json()).errors[0].detail,
          'must not point at a private, loopback or link-local address (an operator may allow them with ' +
            'WEBHOOK_ALLOW_PRIVATE=1)',
        );
      }
    } finally {
      await strict.close();
    }
  });
});

/**
 * The endpoint's first delivery once it is no longer pending. The receiver
 * has already seen the last attempt; the worker records it right after, so
 * this asks again until the record is there.
 */
async function settled(endpointId: number) {
  for (;;) {
    const [delivery] = (await (await send('GET', `/v2/webhook-endpoints/${endpointId}/deliveries`, admin)).json()).data;
    if (delivery.status !== 'pending') return delivery;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('webhook deliveries', () => {
  it('are signed per Standard Webhooks (verified with the standardwebhooks package)', async () => {
    const receiver = await startReceiver();
    try {
      const endpoint = await (
        await send('POST', '/v2/webhook-endpoints', admin, { url: receiver.url, events: ['order.created'] })
      ).json();
      const order = await (await send('POST', '/v1/orders', alice, { items: [{ productId: 1, qty: 1 }] })).json();
      const [delivery] = await receiver.waitFor(1);
      const payload = new Webhook(endpoint.secret).verify(
        delivery!.body,
        delivery!.headers as Record<string, string>,
      ) as { type: string; data: { id: number } };
      assert.equal(payload.type, 'order.created');
      assert.equal(payload.data.id, order.id);
      assert.equal(delivery!.headers['content-type'], 'application/json');
      assert.throws(() =>
        new Webhook(`whsec_${Buffer.from('another secret').toString('base64')}`).verify(
          delivery!.body,
          delivery!.headers as Record<string, string>,
        ),
      );
      await send('DELETE', `/v2/webhook-endpoints/${endpoint.id}`, admin);
    } finally {
      await receiver.close();
    }
  });

  it('are retried after failures and acknowledged once, each attempt recorded, with one webhook-id', async () => {
    const receiver = await startReceiver((n) => (n <= 2 ? 500 : 200));
    try {
      const endpoint = await (
        await send('POST', '/v2/webhook-endpoints', admin, { url: receiver.url, events: ['user.created'] })
      ).json();
      await send('POST', '/v1/users', admin, { email: 'retry.me@example.com', name: 'Retry' });
      const received = await receiver.waitFor(3);
      assert.equal(new Set(received.map((r) => r.headers['webhook-id'])).size, 1);
      for (const r of received) new Webhook(endpoint.secret).verify(r.body, r.headers as Record<string, string>);
      const delivery = await settled(endpoint.id);
      assert.equal(delivery.status, 'delivered');
      assert.equal(delivery.attempts, 3);
      assert.deepEqual(
        delivery.attemptLog.map((a: { status: number }) => a.status),
        [500, 500, 200],
      );
      assert.equal(`msg_${delivery.id}`, received[0]!.headers['webhook-id']);
      await send('DELETE', `/v2/webhook-endpoints/${endpoint.id}`, admin);
    } finally {
      await receiver.close();
    }
  });

  it('drop the late result of an attempt whose delivery was claimed again (fencing)', async () => {
    const endpoint = await (
      await send('POST', '/v2/webhook-endpoints', admin, { url: 'http://127.0.0.1:9/never', events: ['order.deleted'] })
    ).json();
    await send('DELETE', `/v2/webhook-endpoints/${endpoint.id}`, admin);
    const db = t.server.db;
    const [event] = await db.sql<
      { id: number }[]
    >`INSERT INTO events (type, data) VALUES ('order.deleted', '{}') RETURNING id`;
    const [other] = await db.sql<{ id: number }[]>`INSERT INTO webhook_endpoints (url, events, secret)
      VALUES ('http://127.0.0.1:9/x', '{order.deleted}', 'whsec_eA==') RETURNING id`;
    const [delivery] = await db.sql<
      { id: number }[]
    >`INSERT INTO webhook_deliveries (endpoint_id, event_id, attempts, status, next_attempt_at)
      VALUES (${other!.id}, ${event!.id}, 2, 'delivered', now()) RETURNING id`;
    // Attempt 1's result arrives after attempt 2 delivered it: it must change nothing.
    assert.equal(await db.opt('RecordAttempt', [delivery!.id, 500, null, 10, 'pending', 5, 1]), undefined);
    const [row] = await db.sql<
      { status: string; attempts: number; n: number }[]
    >`SELECT status, attempts, (SELECT count(*)::int FROM webhook_attempts WHERE delivery_id = ${delivery!.id}) AS n
      FROM webhook_deliveries WHERE id = ${delivery!.id}`;
    assert.deepEqual({ ...row }, { status: 'delivered', attempts: 2, n: 0 });
    await db.sql`DELETE FROM webhook_endpoints WHERE id = ${other!.id}`;
  });

  it('fail after the last retry', async () => {
    const receiver = await startReceiver(() => 503);
    try {
      const endpoint = await (
        await send('POST', '/v2/webhook-endpoints', admin, { url: receiver.url, events: ['user.created'] })
      ).json();
      await send('POST', '/v1/users', admin, { email: 'never.ok@example.com', name: 'Never' });
      await receiver.waitFor(4);
      const delivery = await settled(endpoint.id);
      assert.equal(delivery.status, 'failed');
      assert.equal(delivery.attempts, 4);
      assert.equal(delivery.nextAttemptAt, null);
      await send('DELETE', `/v2/webhook-endpoints/${endpoint.id}`, admin);
    } finally {
      await receiver.close();
    }
  });
});
