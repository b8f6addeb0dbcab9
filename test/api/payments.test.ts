/**
 * Payments and idempotency keys (contract §4, §7) over HTTP, on the database of
 * this run: the rules, the replay, and the concurrency and fault proofs.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bearer, startTestServer, type Account, type TestServer } from '../support/server.ts';

let t: TestServer;
let admin: Account;
let alice: Account;
let bob: Account;
let keyCounter = 0;
const newKey = () => `key-${process.pid}-${++keyCounter}`;

before(async () => {
  t = await startTestServer();
  admin = await t.user('admin');
  alice = await t.user('customer');
  bob = await t.user('customer');
});
after(async () => {
  await t.close();
});

async function order(who: Account, items = [{ productId: 1, qty: 2 }]): Promise<{ id: number; total: number }> {
  const response = await t.fetch('/v1/orders', {
    method: 'POST',
    headers: { ...bearer(who.token), 'content-type': 'application/json' },
    body: JSON.stringify({ items }),
  });
  return response.json();
}

function pay(who: Account, body: unknown, key: string | null, version = 'v1', server: TestServer = t) {
  return server.fetch(`/${version}/payments`, {
    method: 'POST',
    headers: {
      ...bearer(who.token),
      'content-type': 'application/json',
      ...(key === null ? {} : { 'idempotency-key': key }),
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function problem(response: Response, status: number, type: string) {
  const text = await response.text();
  assert.equal(response.status, status, text);
  const body = JSON.parse(text);
  assert.equal(body.type, `/problems/${type}`);
  return body;
}

const countPayments = async (orderId: number) =>
  (await t.server.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM payments WHERE order_id = ${orderId}`)[0]!.n;
const statusOf = async (orderId: number) =>
  (await t.server.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE id = ${orderId}`)[0]!.status;

describe('POST /payments', () => {
  it('pays a pending order: 201, Location, the payment, and the order is paid', async () => {
    const o = await order(alice);
    const response = await pay(alice, { orderId: o.id, amount: 25, currency: 'EUR' }, newKey());
    assert.equal(response.status, 201);
    const payment = await response.json();
    assert.equal(response.headers.get('location'), `/v1/payments/${payment.id}`);
    assert.match(response.headers.get('etag') ?? '', /^"/);
    assert.equal(response.headers.get('idempotent-replayed'), null);
    assert.deepEqual(
      { ...payment, id: 0, createdAt: '' },
      { id: 0, orderId: o.id, amount: 25, currency: 'EUR', status: 'succeeded', createdAt: '' },
    );
    assert.equal(await statusOf(o.id), 'paid');
    const fetched = await t.fetch(`/v1/payments/${payment.id}`, { headers: bearer(alice.token) });
    assert.deepEqual(await fetched.json(), payment);
    assert.equal(fetched.headers.get('cache-control'), 'no-store');
  });

  it('takes the v2 body with a money object, and answers in v2', async () => {
    const o = await order(alice, [{ productId: 3, qty: 3 }]);
    const response = await pay(alice, { orderId: o.id, amount: { amount: '59.85', currency: 'EUR' } }, newKey(), 'v2');
    assert.equal(response.status, 201);
    assert.deepEqual((await response.json()).amount, { amount: '59.85', currency: 'EUR' });
  });

  it('requires the Idempotency-Key: 400 idempotency-key-missing', async () => {
    const o = await order(alice);
    await problem(
      await pay(alice, { orderId: o.id, amount: 25, currency: 'EUR' }, null),
      400,
      'idempotency-key-missing',
    );
    assert.equal(await countPayments(o.id), 0);
  });

  it('refuses a malformed key: 400 invalid-header', async () => {
    const o = await order(alice);
    for (const key of ['has space', 'x'.repeat(256), '"unterminated', '"bad\\escape"', '""', '" "', '"a b"']) {
      await problem(await pay(alice, { orderId: o.id, amount: 25, currency: 'EUR' }, key), 400, 'invalid-header');
    }
  });

  it('accepts 255 characters, and a structured-field string, unquoted', async () => {
    const o = await order(alice);
    const key = `sf-${newKey()}`;
    const first = await pay(alice, { orderId: o.id, amount: 25, currency: 'EUR' }, `"${key}"`);
    assert.equal(first.status, 201);
    const again = await pay(alice, { orderId: o.id, amount: 25, currency: 'EUR' }, key);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    const long = await order(alice);
    assert.equal((await pay(alice, { orderId: long.id, amount: 25, currency: 'EUR' }, 'k'.repeat(255))).status, 201);
  });

  describe('compares a v1 amount as the decimal the client wrote (contract §4)', () => {
    const cases: [string, number][] = [
      ['24.999999999999999', 422], // JSON.parse makes 25 of it: never a payment of 25.00
      ['25.000000000000001', 422],
      ['25.000', 201],
      ['2.5e1', 201],
      ['2500E-2', 201],
      ['1e-999999', 422], // 0 as a float; out of numeric's range, never a 500
      ['1e999', 422], // Infinity as a float: refused by the schema
      ['-0', 422],
    ];
    for (const [amount, status] of cases) {
      it(`"amount": ${amount} against a total of 25.00: ${status}`, async () => {
        const o = await order(alice);
        const body = `{"orderId": ${o.id}, "currency": "EUR", "amount": ${amount} }`;
        const response = await pay(alice, body, newKey());
        const text = await response.text();
        assert.equal(response.status, status, text);
        assert.equal(await countPayments(o.id), status === 201 ? 1 : 0);
        assert.equal(await statusOf(o.id), status === 201 ? 'paid' : 'pending');
        if (status === 422) assert.equal(JSON.parse(text).errors[0].pointer, '/amount');
      });
    }
  });

  it('tells a corrected amount under one key from the first: 422 idempotency-key-mismatch, no replay', async () => {
    // contract §7: the fingerprint compares numbers as the payment rule does, by their exact decimal value.
    const o = await order(alice);
    const key = newKey();
    const wrong = await pay(alice, `{"orderId": ${o.id}, "currency": "EUR", "amount": 24.999999999999999}`, key);
    assert.equal(wrong.status, 422);
    await wrong.arrayBuffer();
    const corrected = await pay(alice, `{"orderId": ${o.id}, "currency": "EUR", "amount": 25}`, key);
    await problem(corrected, 422, 'idempotency-key-mismatch');
    // The same amount written otherwise is the same body: the stored answer again.
    const same = await pay(alice, `{"orderId":${o.id},"amount":24.999999999999999000,"currency":"EUR"}`, key);
    assert.equal(same.status, 422);
    assert.equal(same.headers.get('idempotent-replayed'), 'true');
    await same.arrayBuffer();
    assert.equal(await countPayments(o.id), 0);
  });

  it('answers 422 when the amount differs by a cent or the currency differs', async () => {
    const o = await order(alice);
    const cent = await problem(
      await pay(alice, { orderId: o.id, amount: 24.99, currency: 'EUR' }, newKey()),
      422,
      'validation',
    );
    assert.deepEqual(cent.errors, [{ pointer: '/amount', detail: 'must equal the order total, 25.00' }]);
    const floaty = await problem(
      await pay(alice, { orderId: o.id, amount: 25.001, currency: 'EUR' }, newKey()),
      422,
      'validation',
    );
    assert.equal(floaty.errors[0].pointer, '/amount');
    const usd = await problem(
      await pay(alice, { orderId: o.id, amount: 25, currency: 'USD' }, newKey()),
      422,
      'validation',
    );
    assert.deepEqual(usd.errors, [{ pointer: '/currency', detail: "must be the order's currency, EUR" }]);
    const v2 = await problem(
      await pay(alice, { orderId: o.id, amount: { amount: '25.01', currency: 'EUR' } }, newKey(), 'v2'),
      422,
      'validation',
    );
    assert.deepEqual(v2.errors, [{ pointer: '/amount/amount', detail: 'must equal the order total, 25.00' }]);
    assert.equal(await countPayments(o.id), 0);
    assert.equal(await statusOf(o.id), 'pending');
  });

  it('refuses bodies of the wrong version or shape with 422', async () => {
    const o = await order(alice);
    await problem(
      await pay(alice, { orderId: o.id, amount: { amount: '25.00', currency: 'EUR' } }, newKey(), 'v1'),
      422,
      'validation',
    );
    await problem(await pay(alice, { orderId: o.id, amount: 25, currency: 'EUR' }, newKey(), 'v2'), 422, 'validation');
    await problem(
      await pay(alice, { orderId: o.id, amount: 25, currency: 'EUR', status: 'succeeded' }, newKey()),
      422,
      'validation',
    );
    await problem(
      await pay(alice, { orderId: o.id, amount: { amount: '25', currency: 'eur' } }, newKey(), 'v2'),
      422,
      'validation',
    );
  });

  it("answers an unknown or another customer's order with 422 at /orderId, alike", async () => {
    const theirs = await order(bob);
    const other = await problem(
      await pay(alice, { orderId: theirs.id, amount: 25, currency: 'EUR' }, newKey()),
      422,
      'validation',
    );
    const missing = await problem(
      await pay(alice, { orderId: 99999999, amount: 25, currency: 'EUR' }, newKey()),
      422,
      'validation',
    );
    assert.deepEqual(other.errors, [{ pointer: '/orderId', detail: `there is no order ${theirs.id}` }]);
    assert.deepEqual(missing.errors, [{ pointer: '/orderId', detail: 'there is no order 99999999' }]);
    assert.equal(await countPayments(theirs.id), 0);
  });

  it('answers 409 order-not-payable for an order that is not pending', async () => {
    const o = await order(alice);
    assert.equal((await pay(alice, { orderId: o.id, amount: 25, currency: 'EUR' }, newKey())).status, 201);
    const body = await problem(
      await pay(alice, { orderId: o.id, amount: 25, currency: 'EUR' }, newKey()),
      409,
      'order-not-payable',
    );
    assert.equal(body.detail, `Order ${o.id} is paid; only a pending order can be paid.`);
    assert.equal(await countPayments(o.id), 1);
    const cancelled = await order(alice);
    await t.fetch(`/v1/orders/${cancelled.id}`, {
      method: 'PATCH',
      headers: { ...bearer(alice.token), 'content-type': 'application/json' },
      body: '{"status":"cancelled"}',
    });
    await problem(
      await pay(alice, { orderId: cancelled.id, amount: 25, currency: 'EUR' }, newKey()),
      409,
      'order-not-payable',
    );
  });

  it('lets an admin pay any order', async () => {
    const o = await order(bob);
    assert.equal((await pay(admin, { orderId: o.id, amount: 25, currency: 'EUR' }, newKey())).status, 201);
  });

  it('needs payments:write', async () => {
    const reader = await t.user('customer', ['orders:read', 'orders:write', 'payments:read']);
    const o = await order(reader);
    const response = await pay(reader, { orderId: o.id, amount: 25, currency: 'EUR' }, newKey());
    assert.equal(response.status, 403);
    assert.equal(response.headers.get('www-authenticate'), 'Bearer error="insufficient_scope", scope="payments:write"');
  });
});

describe('idempotency (contract §7)', () => {
  it('replays the stored result byte for byte, Location and ETag included, and changes nothing', async () => {
    const o = await order(alice);
    const key = newKey();
    const body = { orderId: o.id, amount: 25, currency: 'EUR' };
    const first = await pay(alice, body, key);
    const firstText = await first.text();
    // The same body with its keys in another order has the same fingerprint.
    const again = await pay(alice, { currency: 'EUR', amount: 25, orderId: o.id }, key);
    assert.equal(again.status, 201);
    assert.equal(await again.text(), firstText);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(again.headers.get('location'), first.headers.get('location'));
    assert.equal(again.headers.get('etag'), first.headers.get('etag'));
    assert.equal(again.headers.get('content-type'), first.headers.get('content-type'));
    assert.equal(await countPayments(o.id), 1);
  });

  it('answers the same key with another body, path or method with 422 idempotency-key-mismatch', async () => {
    const o = await order(alice);
    const key = newKey();
    assert.equal((await pay(alice, { orderId: o.id, amount: 25, currency: 'EUR' }, key)).status, 201);
    await problem(
      await pay(alice, { orderId: o.id, amount: 26, currency: 'EUR' }, key),
      422,
      'idempotency-key-mismatch',
    );
    await problem(
      await pay(alice, { orderId: o.id, amount: { amount: '25.00', currency: 'EUR' } }, key, 'v2'),
      422,
      'idempotency-key-mismatch',
    );
    const asOrder = await t.fetch('/v1/orders', {
      method: 'POST',
      headers: { ...bearer(alice.token), 'content-type': 'application/json', 'idempotency-key': key },
      body: '{"items":[{"productId":1,"qty":1}]}',
    });
    await problem(asOrder, 422, 'idempotency-key-mismatch');
  });

  it('tells apart the versions negotiated by Accept: a replay never changes version', async () => {
    const key = newKey();
    const send = (accept: string | undefined) =>
      t.fetch('/orders', {
        method: 'POST',
        headers: {
          ...bearer(alice.token),
          'content-type': 'application/json',
          'idempotency-key': key,
          ...(accept ? { accept } : {}),
        },
        body: '{"items":[{"productId":2,"qty":1}]}',
      });
    assert.equal((await send('application/vnd.orders.v2+json')).status, 201);
    await problem(await send(undefined), 422, 'idempotency-key-mismatch');
  });

  it('replays a stored refusal with Cache-Control: no-store', async () => {
    const key = newKey();
    const send = () =>
      t.fetch('/v1/orders', {
        method: 'POST',
        headers: { ...bearer(alice.token), 'content-type': 'application/json', 'idempotency-key': key },
        body: '{"items":[{"productId":999999,"qty":1}]}',
      });
    assert.equal((await send()).status, 422);
    const again = await send();
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(again.headers.get('cache-control'), 'no-store');
  });

  it('scopes keys to the user: the same key of another user is another request', async () => {
    const key = newKey();
    const mine = await order(alice);
    const theirs = await order(bob);
    assert.equal((await pay(alice, { orderId: mine.id, amount: 25, currency: 'EUR' }, key)).status, 201);
    const response = await pay(bob, { orderId: theirs.id, amount: 25, currency: 'EUR' }, key);
    assert.equal(response.status, 201);
    assert.equal(response.headers.get('idempotent-replayed'), null);
  });

  it('stores business refusals (409, 422) and replays them', async () => {
    const o = await order(alice);
    const key = newKey();
    const first = await pay(alice, { orderId: o.id, amount: 1, currency: 'EUR' }, key);
    const text = await first.text();
    assert.equal(first.status, 422);
    const again = await pay(alice, { orderId: o.id, amount: 1, currency: 'EUR' }, key);
    assert.equal(again.status, 422);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(await again.text(), text);
  });

  it('does not store requests refused before executing: a retry runs anew', async () => {
    const o = await order(alice);
    const key = newKey();
    await problem(await pay(alice, '{"orderId": ', key), 400, 'malformed-json');
    const typed = await t.fetch('/v1/payments', {
      method: 'POST',
      headers: { ...bearer(alice.token), 'content-type': 'text/plain', 'idempotency-key': key },
      body: '{}',
    });
    await problem(typed, 415, 'unsupported-media-type');
    const response = await pay(alice, { orderId: o.id, amount: 25, currency: 'EUR' }, key);
    assert.equal(response.status, 201);
    assert.equal(response.headers.get('idempotent-replayed'), null);
  });

  it('makes POST /orders and POST /users idempotent too', async () => {
    const key = newKey();
    const send = () =>
      t.fetch('/v1/orders', {
        method: 'POST',
        headers: { ...bearer(alice.token), 'content-type': 'application/json', 'idempotency-key': key },
        body: '{"items":[{"productId":4,"qty":1}]}',
      });
    const first = await send();
    const second = await send();
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.equal(await second.text(), await first.text());
    const userKey = newKey();
    const create = () =>
      t.fetch('/v1/users', {
        method: 'POST',
        headers: { ...bearer(admin.token), 'content-type': 'application/json', 'idempotency-key': userKey },
        body: JSON.stringify({ email: `${userKey}@example.com`, name: 'Once' }),
      });
    const u1 = await (await create()).json();
    const u2 = await create();
    assert.equal(u2.status, 201);
    assert.deepEqual(await u2.json(), u1);
    const rows = await t.server.db.sql`SELECT 1 FROM users WHERE email = ${`${userKey}@example.com`}`;
    assert.equal(rows.length, 1);
  });

  it('forgets keys older than 24 hours: the purge removes them and the key runs anew', async () => {
    const o = await order(alice);
    const key = newKey();
    assert.equal((await pay(alice, { orderId: o.id, amount: 25, currency: 'EUR' }, key)).status, 201);
    await t.server.db.sql`UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = ${key}`;
    // Expired but not yet purged: the key is free again (here: the order is paid now, so 409).
    await problem(await pay(alice, { orderId: o.id, amount: 25, currency: 'EUR' }, key), 409, 'order-not-payable');
    await t.server.db.sql`UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = ${key}`;
    assert.equal(await t.server.db.exec('PurgeIdempotencyKeys'), 1);
    const left = await t.server.db.sql`SELECT 1 FROM idempotency_keys WHERE key = ${key}`;
    assert.equal(left.length, 0);
  });

  it('20 concurrent identical payments with one key make exactly one payment', async (ctx) => {
    const o = await order(alice);
    const key = newKey();
    const body = { orderId: o.id, amount: 25, currency: 'EUR' };
    const responses = await Promise.all(Array.from({ length: 20 }, () => pay(alice, body, key)));
    const results = await Promise.all(
      responses.map(async (r) => ({
        status: r.status,
        text: await r.text(),
        retryAfter: r.headers.get('retry-after'),
      })),
    );
    const created = results.filter((r) => r.status === 201);
    const inUse = results.filter((r) => r.status === 409);
    assert.equal(
      created.length + inUse.length,
      20,
      JSON.stringify(results.filter((r) => r.status !== 201 && r.status !== 409)),
    );
    assert.ok(created.length >= 1);
    assert.equal(new Set(created.map((r) => r.text)).size, 1, 'every 201 carries the same body');
    for (const r of inUse) {
      assert.equal(JSON.parse(r.text).type, '/problems/idempotency-key-in-use');
      assert.equal(r.retryAfter, '1');
    }
    assert.equal(await countPayments(o.id), 1);
    const retry = await pay(alice, body, key);
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    assert.equal(await retry.text(), created[0]!.text);
    ctx.diagnostic(
      `20 concurrent requests, one key: ${created.length} × 201 (identical), ${inUse.length} × 409 in-use, ` +
        `${await countPayments(o.id)} payment row`,
    );
  });
});

describe('repeats of a finished idempotent request', () => {
  it('20 concurrent repeats after the first finished all get the replay, never 409', async () => {
    const o = await order(alice);
    const key = newKey();
    const body = { orderId: o.id, amount: 25, currency: 'EUR' };
    const first = await pay(alice, body, key);
    assert.equal(first.status, 201);
    const firstText = await first.text();
    // On the real server the repeats run concurrently, each in its own
    // transaction: each finds the advisory lock held by another repeat.
    const responses = await Promise.all(Array.from({ length: 20 }, () => pay(alice, body, key)));
    const results = await Promise.all(
      responses.map(async (r) => ({
        status: r.status,
        replayed: r.headers.get('idempotent-replayed'),
        text: await r.text(),
      })),
    );
    assert.deepEqual(
      results.map((r) => [r.status, r.replayed]),
      Array.from({ length: 20 }, () => [201, 'true']),
    );
    assert.ok(
      results.every((r) => r.text === firstText),
      'every replay is the first answer, byte for byte',
    );
    assert.equal(await countPayments(o.id), 1);
  });

  it('a concurrent repeat with another body gets 422 mismatch, not 409', async () => {
    const o = await order(alice);
    const key = newKey();
    assert.equal((await pay(alice, { orderId: o.id, amount: 25, currency: 'EUR' }, key)).status, 201);
    const responses = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        pay(alice, { orderId: o.id, amount: i % 2 === 0 ? 25 : 26, currency: 'EUR' }, key),
      ),
    );
    assert.deepEqual(
      responses.map((r) => r.status),
      Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? 201 : 422)),
    );
  });
});

describe('a fault after the payment insert, before commit', () => {
  let faulty: TestServer;
  let fail = true;
  before(async () => {
    faulty = await startTestServer({}, undefined, {
      afterPaymentInsert: async () => {
        if (fail) throw new Error('injected fault');
      },
    });
  });
  after(async () => {
    await faulty.close();
  });

  it('leaves no payment, no stored key, the order pending; the retry with the same key succeeds', async () => {
    const who = await faulty.user('customer');
    const created = await faulty.fetch('/v1/orders', {
      method: 'POST',
      headers: { ...bearer(who.token), 'content-type': 'application/json' },
      body: '{"items":[{"productId":1,"qty":2}]}',
    });
    const o = await created.json();
    const key = 'fault-key';
    const body = { orderId: o.id, amount: 25, currency: 'EUR' };
    const failed = await pay(who, body, key, 'v1', faulty);
    assert.equal(failed.status, 500);
    const db = faulty.server.db;
    assert.equal(
      (await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM payments WHERE order_id = ${o.id}`)[0]!.n,
      0,
    );
    assert.equal(
      (await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM idempotency_keys WHERE key = ${key}`)[0]!.n,
      0,
    );
    assert.equal(
      (await db.sql<{ status: string }[]>`SELECT status FROM orders WHERE id = ${o.id}`)[0]!.status,
      'pending',
    );
    fail = false;
    const retry = await pay(who, body, key, 'v1', faulty);
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get('idempotent-replayed'), null);
    assert.equal(
      (await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM payments WHERE order_id = ${o.id}`)[0]!.n,
      1,
    );
  });
});

describe('GET /payments', () => {
  it('lists a customer their own payments of an order, requires orderId from them, and hides others', async () => {
    const o = await order(alice);
    const paid = await (await pay(alice, { orderId: o.id, amount: 25, currency: 'EUR' }, newKey())).json();
    const mine = await t.fetch(`/v1/payments?orderId=${o.id}`, { headers: bearer(alice.token) });
    assert.equal(mine.headers.get('cache-control'), 'no-store');
    assert.deepEqual((await mine.json()).data, [paid]);
    const noFilter = await t.fetch('/v1/payments', { headers: bearer(alice.token) });
    assert.deepEqual((await problem(noFilter, 400, 'invalid-query')).errors, [
      { parameter: 'orderId', detail: 'is required for customers' },
    ]);
    const theirs = await t.fetch(`/v1/payments?orderId=${o.id}`, { headers: bearer(bob.token) });
    assert.deepEqual((await theirs.json()).data, []);
    await problem(await t.fetch(`/v1/payments/${paid.id}`, { headers: bearer(bob.token) }), 404, 'not-found');
  });

  it('lists every payment for an admin, sortable, strict about parameters', async () => {
    const all = await (
      await t.fetch('/v1/payments?pageSize=100&sort=-createdAt', { headers: bearer(admin.token) })
    ).json();
    assert.ok(all.meta.total >= 5);
    assert.equal((await t.fetch('/v1/payments?status=paid', { headers: bearer(admin.token) })).status, 400);
  });
});

describe('DELETE /orders/{id} with a payment', () => {
  it('answers 409 order-has-payments and keeps the order', async () => {
    const o = await order(alice);
    await pay(alice, { orderId: o.id, amount: 25, currency: 'EUR' }, newKey());
    await problem(
      await t.fetch(`/v1/orders/${o.id}`, { method: 'DELETE', headers: bearer(admin.token) }),
      409,
      'order-has-payments',
    );
    assert.equal((await t.fetch(`/v1/orders/${o.id}`, { headers: bearer(alice.token) })).status, 200);
  });
});
