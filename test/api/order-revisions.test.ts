/**
 * An order's entity tag comes from its revision (contract §9;
 * sql/migrations/0008_order_revision.sql), over the real server on the
 * database of this run: every kind of change, by this service or around it,
 * changes the tag; each version and media type has its own; If-None-Match is
 * answered from the revision alone with the headers of the 200, and never
 * reveals another customer's order; If-Match compares the same tag.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import postgres from 'postgres';
import type { BatchedRead, BatchParam, Db, Param, Tx } from '../../src/db/database.ts';
import { REAL_SERVER_URL } from '../support/database.ts';
import { startService } from '../support/process.ts';
import { bearer, startTestServer, type Account, type TestServer } from '../support/server.ts';

const V1 = 'application/vnd.orders.v1+json';
const V2 = 'application/vnd.orders.v2+json';
const REAL_ONLY = REAL_SERVER_URL
  ? false
  : 'needs a real PostgreSQL server (the embedded one lives inside this process)';

let t: TestServer;
let admin: Account;
let alice: Account;
let bob: Account;
let keys = 0;

before(async () => {
  t = await startTestServer({
    CACHE_MAX_AGE: '30',
    V1_DEPRECATED_AT: '2026-12-01T00:00:00Z',
    V1_SUNSET_AT: '2099-06-01T00:00:00Z',
    // The statements counted below are the primary's: no replica, also in CI's run with one (test/db/replica.test.ts
    // checks the conditional requests a replica serves).
    DATABASE_READ_URL: '',
  });
  admin = await t.user('admin');
  alice = await t.user('customer');
  bob = await t.user('customer');
});
after(async () => {
  await t.close();
});

/** The four representations of one order: each version, in plain JSON and in its vendor type. */
const VARIANTS = [
  { name: 'v1 application/json', path: '/v1', accept: undefined },
  { name: 'v1 vendor type', path: '/v1', accept: V1 },
  { name: 'v2 application/json', path: '/v2', accept: undefined },
  { name: 'v2 vendor type', path: '/v2', accept: V2 },
] as const;
type Variant = (typeof VARIANTS)[number];

const json = { 'content-type': 'application/json' };

async function newOrder(who: Account = alice): Promise<{ id: number; total: number }> {
  const response = await t.fetch('/v1/orders', {
    method: 'POST',
    headers: { ...bearer(who.token), ...json },
    body: '{"items":[{"productId":1,"qty":2},{"productId":2,"qty":1}]}',
  });
  assert.equal(response.status, 201);
  return response.json();
}

function get(
  id: number,
  variant: Variant = VARIANTS[0],
  headers: Record<string, string> = {},
  who: Account = admin,
  method = 'GET',
) {
  return t.fetch(`${variant.path}/orders/${id}`, {
    method,
    headers: { ...bearer(who.token), ...(variant.accept ? { accept: variant.accept } : {}), ...headers },
  });
}

async function tagOf(id: number, variant: Variant = VARIANTS[0], who: Account = admin): Promise<string> {
  const response = await get(id, variant, {}, who);
  assert.equal(response.status, 200);
  return response.headers.get('etag') as string;
}

const tagsOf = (id: number) => Promise.all(VARIANTS.map((variant) => tagOf(id, variant)));

function patch(id: number, body: string, who: Account = alice, headers: Record<string, string> = {}, path = '/v1') {
  return t.fetch(`${path}/orders/${id}`, {
    method: 'PATCH',
    headers: { ...bearer(who.token), ...json, ...headers },
    body,
  });
}

/**
 * The names of the order statements `run` makes the service execute: a
 * pass-through record of `one()` on the handles the service takes for its
 * requests, and on the transactions begun on them.
 */
async function orderStatementsOf(run: () => Promise<unknown>): Promise<string[]> {
  const db = t.server.db;
  const original = db.handle;
  const names: string[] = [];
  // A handle's methods are on its prototype: the rest are handed on, bound to it.
  const recording = <H extends Db>(handle: H): H => ({
    ...handle,
    pool: handle.pool,
    many: handle.many.bind(handle),
    exec: handle.exec.bind(handle),
    composed: handle.composed.bind(handle),
    ...('savepoint' in handle ? { savepoint: (handle as unknown as Tx).savepoint.bind(handle) } : {}),
    one: ((name: string, params?: readonly Param[]) => {
      names.push(name);
      return handle.one(name as never, params as never);
    }) as Db['one'],
    opt: ((name: string, params?: readonly Param[]) => {
      names.push(name);
      return handle.opt(name as never, params as never);
    }) as Db['opt'],
    // A read by key: its single statement's name (alone, it is what runs; test/db/batch.test.ts counts batches).
    batched: ((read: BatchedRead, params: readonly BatchParam[]) => {
      names.push(read.single);
      return handle.batched(read as never, params);
    }) as Db['batched'],
    begin<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
      return handle.begin((tx) => work(recording(tx)));
    },
  });
  db.handle = () => recording(original.call(db));
  try {
    await run();
  } finally {
    db.handle = original;
  }
  return names.filter((name) => name.includes('Order'));
}

// Headers every response carries whatever its status, or that the transport adds.
const TRANSPORT = new Set(['date', 'connection', 'keep-alive', 'x-request-id']);
const namesOf = (response: Response) => [...response.headers.keys()].filter((name) => !TRANSPORT.has(name)).sort();

describe('one order, one tag per version and media type', () => {
  it('keeps the tag across repeated GETs and HEADs while nothing changes, whoever asks', async () => {
    const { id } = await newOrder();
    const tag = await tagOf(id);
    for (let i = 0; i < 3; i += 1) assert.equal(await tagOf(id), tag);
    assert.equal(await tagOf(id, VARIANTS[0], alice), tag, 'the owner and an admin see the same representation');
    assert.equal((await get(id, VARIANTS[0], {}, admin, 'HEAD')).headers.get('etag'), tag);
  });

  it('gives v1 and v2, each in application/json and in its vendor type, four different strong tags', async () => {
    const { id } = await newOrder();
    const tags = await tagsOf(id);
    assert.equal(new Set(tags).size, 4, tags.join(' '));
    for (const tag of tags) assert.match(tag, /^"[\x21\x23-\x7e]+"$/);
    // The placement of the version does not matter, only the representation:
    // /orders with Accept v2 is /v2 in the vendor type.
    assert.equal(
      (await t.fetch(`/orders/${id}`, { headers: { ...bearer(admin.token), accept: V2 } })).headers.get('etag'),
      tags[3],
    );
    assert.equal((await t.fetch(`/orders/${id}`, { headers: bearer(admin.token) })).headers.get('etag'), tags[0]);
  });

  it('revalidates each representation with its own tag only', async () => {
    const { id } = await newOrder();
    const tags = await tagsOf(id);
    for (const [i, variant] of VARIANTS.entries()) {
      for (const [j, tag] of tags.entries()) {
        const response = await get(id, variant, { 'if-none-match': tag });
        assert.equal(response.status, i === j ? 304 : 200, `${variant.name} with the tag of ${VARIANTS[j]!.name}`);
      }
    }
  });

  it("answers a write with the tag a GET of the new state gives, in the write's version and media type", async () => {
    const created = await t.fetch('/v2/orders', {
      method: 'POST',
      headers: { ...bearer(alice.token), ...json, accept: V2 },
      body: '{"items":[{"productId":3,"qty":1}]}',
    });
    const { id } = await created.json();
    assert.equal(created.headers.get('etag'), await tagOf(id, VARIANTS[3]));
    const patched = await patch(id, '{"items":[{"productId":3,"qty":2}]}', alice, { accept: V1 });
    assert.equal(patched.headers.get('etag'), await tagOf(id, VARIANTS[1]));
    const put = await t.fetch(`/v2/orders/${id}`, {
      method: 'PUT',
      headers: { ...bearer(alice.token), ...json },
      body: JSON.stringify({ customerId: alice.id, status: 'pending', items: [{ productId: 4, qty: 1 }] }),
    });
    assert.equal(put.headers.get('etag'), await tagOf(id, VARIANTS[2]));
  });

  it('replays a keyed POST with its stored tag, which still revalidates while the order is unchanged', async () => {
    const key = `revision-replay-${process.pid}-${++keys}`;
    const send = () =>
      t.fetch('/v1/orders', {
        method: 'POST',
        headers: { ...bearer(alice.token), ...json, 'idempotency-key': key },
        body: '{"items":[{"productId":5,"qty":1}]}',
      });
    const first = await send();
    const again = await send();
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(again.headers.get('etag'), first.headers.get('etag'));
    const { id } = await first.json();
    assert.equal(first.headers.get('etag'), await tagOf(id));
    assert.equal((await get(id, VARIANTS[0], { 'if-none-match': first.headers.get('etag') as string })).status, 304);
  });
});

describe('every kind of change changes the tag', () => {
  /**
   * Each change to a fresh pending order of alice's (items: product 1 × 2,
   * product 2 × 1); its response, when it is an order write.
   */
  const CHANGES: {
    name: string;
    skip?: string | false;
    change(order: { id: number; total: number }): Promise<Response | undefined>;
  }[] = [
    { name: 'PATCH of the status', change: ({ id }) => patch(id, '{"status":"cancelled"}') },
    {
      name: 'PATCH of the items',
      change: ({ id }) => patch(id, '{"items":[{"productId":1,"qty":3},{"productId":2,"qty":1}]}'),
    },
    {
      name: "PATCH of one item's quantity only",
      change: ({ id }) => patch(id, '{"items":[{"productId":2,"qty":1},{"productId":1,"qty":1}]}'),
    },
    {
      name: 'PATCH of the customer (admin)',
      change: ({ id }) => patch(id, JSON.stringify({ customerId: bob.id }), admin),
    },
    {
      name: 'PUT',
      change: ({ id }) =>
        t.fetch(`/v1/orders/${id}`, {
          method: 'PUT',
          headers: { ...bearer(alice.token), ...json },
          body: JSON.stringify({ customerId: alice.id, status: 'pending', items: [{ productId: 3, qty: 1 }] }),
        }),
    },
    {
      name: 'a payment (the order moves to paid)',
      async change({ id, total }) {
        const paid = await t.fetch('/v1/payments', {
          method: 'POST',
          headers: { ...bearer(alice.token), ...json, 'idempotency-key': `revision-pay-${process.pid}-${++keys}` },
          body: JSON.stringify({ orderId: id, amount: total, currency: 'EUR' }),
        });
        assert.equal(paid.status, 201);
      },
    },
    {
      name: "an item's quantity set straight in the database",
      change: async ({ id }) =>
        void (await t.server.db.sql`UPDATE order_items SET qty = qty + 1 WHERE order_id = ${id} AND product_id = 2`),
    },
    {
      name: 'an item inserted straight in the database',
      change: async ({ id }) =>
        void (await t.server.db
          .sql`INSERT INTO order_items (order_id, product_id, qty, unit_price) VALUES (${id}, 3, 1, 19.95)`),
    },
    {
      name: 'an item deleted straight in the database',
      change: async ({ id }) =>
        void (await t.server.db.sql`DELETE FROM order_items WHERE order_id = ${id} AND product_id = 2`),
    },
    {
      name: 'the order row updated straight in the database',
      change: async ({ id }) => void (await t.server.db.sql`UPDATE orders SET status = 'cancelled' WHERE id = ${id}`),
    },
    {
      name: 'an UPDATE that tries to set the revision back',
      change: async ({ id }) => void (await t.server.db.sql`UPDATE orders SET revision = 1 WHERE id = ${id}`),
    },
    {
      name: 'a change by another connection, in a transaction of several statements',
      skip: REAL_ONLY,
      async change({ id }) {
        const other = postgres(t.database.url, { max: 1, onnotice: () => {} });
        try {
          await other.begin(async (tx) => {
            await tx`UPDATE order_items SET qty = 5 WHERE order_id = ${id} AND product_id = 1`;
            await tx`UPDATE orders SET total = (SELECT sum(qty * unit_price) FROM order_items WHERE order_id = ${id})
              WHERE id = ${id}`;
          });
        } finally {
          await other.end();
        }
      },
    },
    {
      name: 'a PATCH served by a second server process on the same database',
      skip: REAL_ONLY,
      async change({ id }) {
        const service = await startService({ DATABASE_URL: t.database.url, RATE_LIMIT: 'off', LOG_LEVEL: 'warn' });
        try {
          const response = await fetch(`${service.url}/v1/orders/${id}`, {
            method: 'PATCH',
            headers: { ...bearer(alice.token), ...json },
            body: '{"items":[{"productId":1,"qty":4}]}',
          });
          assert.equal(response.status, 200, await response.clone().text());
          return response;
        } finally {
          const exited = once(service.process, 'exit');
          service.process.kill('SIGTERM');
          await exited;
        }
      },
    },
  ];

  for (const { name, skip, change } of CHANGES) {
    it(`${name}: every representation gets a new tag, the old one revalidates no more`, {
      skip: skip ?? false,
    }, async () => {
      const order = await newOrder();
      const before = await tagsOf(order.id);
      const response = await change(order);
      if (response !== undefined) assert.equal(response.status, 200, await response.clone().text());
      const after = await tagsOf(order.id);
      for (const [i, variant] of VARIANTS.entries()) {
        assert.notEqual(after[i], before[i], variant.name);
        const stale = await get(order.id, variant, { 'if-none-match': before[i] as string });
        assert.equal(stale.status, 200, `${variant.name}: the old tag`);
        assert.equal(stale.headers.get('etag'), after[i]);
        assert.equal(
          (await get(order.id, variant, { 'if-none-match': after[i] as string })).status,
          304,
          `${variant.name}: the new tag`,
        );
      }
      assert.equal(new Set(after).size, 4);
      // A write through the API answers the tag of the state it made (v1, application/json here).
      if (response !== undefined) assert.equal(response.headers.get('etag'), after[0]);
    });
  }

  it('bumps an order once for the items a transaction writes after the order itself (migration 0015)', async () => {
    const revision = async (id: number) =>
      (await t.server.db.sql<{ revision: string }[]>`SELECT revision::text FROM orders WHERE id = ${id}`)[0]
        ?.revision as string;
    // The items written with their order: no second bump, by either way of creating it.
    const plain = await newOrder();
    const keyed = await t.fetch('/v1/orders', {
      method: 'POST',
      headers: { ...bearer(alice.token), ...json, 'idempotency-key': `revision-new-${process.pid}-${++keys}` },
      body: '{"items":[{"productId":1,"qty":2},{"productId":2,"qty":1}]}',
    });
    assert.equal(keyed.status, 201);
    const keyedId = ((await keyed.json()) as { id: number }).id;
    assert.deepEqual([await revision(plain.id), await revision(keyedId)], ['1', '1']);
    // An item in a transaction of its own bumps the order.
    await t.server.db
      .sql`INSERT INTO order_items (order_id, product_id, qty, unit_price) VALUES (${plain.id}, 3, 1, 19.95)`;
    assert.equal(await revision(plain.id), '2');
    // Two statements of one transaction: the first bumps, the second finds the order already written by it.
    await t.server.db.sql.unsafe(`DO $$ BEGIN
      UPDATE order_items SET qty = qty + 1 WHERE order_id = ${Number(plain.id)} AND product_id = 3;
      DELETE FROM order_items WHERE order_id = ${Number(plain.id)} AND product_id = 3;
    END $$`);
    assert.equal(await revision(plain.id), '3');
  });

  it('keeps the tag when a write changes nothing (the status it has) or is refused', async () => {
    const { id } = await newOrder();
    const tag = await tagOf(id);
    assert.equal((await patch(id, '{"status":"pending"}')).headers.get('etag'), tag);
    assert.equal((await patch(id, '{"status":"shipped"}')).status, 409);
    assert.equal((await patch(id, '{"items":[{"productId":999999,"qty":1}]}')).status, 422);
    assert.equal(await tagOf(id), tag);
  });

  it('answers a deleted order 404 with its old tag, never 304', async () => {
    const { id } = await newOrder();
    const tag = await tagOf(id);
    assert.equal((await t.fetch(`/v1/orders/${id}`, { method: 'DELETE', headers: bearer(alice.token) })).status, 204);
    assert.equal((await get(id, VARIANTS[0], { 'if-none-match': tag })).status, 404);
  });
});

describe('If-None-Match on an order, answered from its revision', () => {
  it('answers the current tag 304: exactly the headers of the 200, no body; v1 and v2, GET and HEAD', async () => {
    const { id } = await newOrder();
    for (const variant of VARIANTS) {
      const full = await get(id, variant);
      const tag = full.headers.get('etag') as string;
      for (const method of ['GET', 'HEAD']) {
        const response = await get(id, variant, { 'if-none-match': tag }, admin, method);
        assert.equal(response.status, 304, `${variant.name} ${method}`);
        const v1 = variant.path === '/v1';
        assert.deepEqual(namesOf(response), [
          'cache-control',
          ...(v1 ? ['deprecation'] : []),
          'etag',
          ...(v1 ? ['link', 'sunset'] : []),
          'vary',
        ]);
        for (const name of namesOf(response))
          assert.equal(response.headers.get(name), full.headers.get(name), `${variant.name} ${method} ${name}`);
        assert.equal(response.headers.get('cache-control'), 'private, max-age=30');
        assert.equal(response.headers.get('vary'), 'Accept, Authorization, Accept-Encoding');
        assert.equal(await response.text(), '');
      }
    }
  });

  it('matches a list, a weak form of the tag, and *', async () => {
    const { id } = await newOrder();
    const tag = await tagOf(id);
    for (const condition of [`"other", ${tag}`, `W/${tag}`, '*']) {
      assert.equal((await get(id, VARIANTS[0], { 'if-none-match': condition })).status, 304, condition);
    }
  });

  it('runs one revision lookup for a 304, and builds the order only for a 200', async () => {
    const { id } = await newOrder();
    const tag = await tagOf(id);
    assert.deepEqual(await orderStatementsOf(() => get(id, VARIANTS[0], { 'if-none-match': tag })), [
      'GetOrderRevision',
    ]);
    assert.deepEqual(await orderStatementsOf(() => get(id, VARIANTS[0], { 'if-none-match': '"old"' })), [
      'GetOrderRevision',
      'GetOrderJson',
    ]);
    assert.deepEqual(await orderStatementsOf(() => get(id)), ['GetOrderJson']);
  });

  it('answers an old tag 200 with the order and its current tag', async () => {
    const { id } = await newOrder();
    const old = await tagOf(id);
    await patch(id, '{"items":[{"productId":1,"qty":9}]}');
    const response = await get(id, VARIANTS[0], { 'if-none-match': old });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('etag'), await tagOf(id));
    assert.equal((await response.json()).items[0].qty, 9);
  });

  it('answers another customer 404 for an order that is not theirs, whatever tag they guess, never 304', async () => {
    const { id } = await newOrder(alice);
    const tag = await tagOf(id, VARIANTS[0], alice);
    for (const condition of [tag, '*']) {
      const response = await get(id, VARIANTS[0], { 'if-none-match': condition }, bob);
      assert.equal(response.status, 404, condition);
      assert.equal((await response.json()).type, '/problems/not-found');
    }
    assert.equal((await get(99_999_999, VARIANTS[0], { 'if-none-match': '*' })).status, 404);
  });

  it('answers a malformed If-None-Match 400 invalid-header', async () => {
    const { id } = await newOrder();
    const response = await get(id, VARIANTS[0], { 'if-none-match': 'o1r1' });
    assert.equal(response.status, 400);
    assert.equal((await response.json()).type, '/problems/invalid-header');
  });
});

describe('If-Match on an order, compared with the revision under the row lock', () => {
  it('refuses an old tag with 412 and writes nothing; takes the current tag and *', async () => {
    const { id } = await newOrder();
    const old = await tagOf(id);
    await patch(id, '{"items":[{"productId":1,"qty":2}]}');
    const current = await tagOf(id);
    const refused = await patch(id, '{"items":[{"productId":1,"qty":6}]}', alice, { 'if-match': old });
    assert.equal(refused.status, 412);
    assert.equal((await refused.json()).type, '/problems/precondition-failed');
    assert.equal(await tagOf(id), current);
    const taken = await patch(id, '{"items":[{"productId":1,"qty":6}]}', alice, { 'if-match': current });
    assert.equal(taken.status, 200);
    assert.notEqual(taken.headers.get('etag'), current);
    assert.equal(taken.headers.get('etag'), await tagOf(id));
    assert.equal((await patch(id, '{"items":[{"productId":1,"qty":7}]}', alice, { 'if-match': '*' })).status, 200);
  });

  it("compares the tag of the request's version and media type", async () => {
    const { id } = await newOrder();
    const [v1json, v1vendor, v2json] = await tagsOf(id);
    assert.equal(
      (await patch(id, '{"status":"pending"}', alice, { 'if-match': v1vendor as string })).status,
      412,
      'a vendor-type tag on an application/json request',
    );
    assert.equal(
      (await patch(id, '{"status":"pending"}', alice, { 'if-match': v2json as string })).status,
      412,
      'a v2 tag on a v1 request',
    );
    assert.equal(
      (await patch(id, '{"status":"pending"}', alice, { 'if-match': v1vendor as string, accept: V1 })).status,
      200,
    );
    assert.equal((await patch(id, '{"status":"pending"}', alice, { 'if-match': v1json as string })).status, 200);
  });

  it('checks PUT and DELETE too, and refuses another customer with 404 even with *', async () => {
    const { id } = await newOrder();
    const tag = await tagOf(id, VARIANTS[2]);
    const put = (ifMatch: string) =>
      t.fetch(`/v2/orders/${id}`, {
        method: 'PUT',
        headers: { ...bearer(alice.token), ...json, 'if-match': ifMatch },
        body: JSON.stringify({ customerId: alice.id, status: 'pending', items: [{ productId: 6, qty: 1 }] }),
      });
    assert.equal((await put(tag)).status, 200);
    assert.equal((await put(tag)).status, 412, 'the PUT changed it');
    const del = (who: Account, ifMatch: string) =>
      t.fetch(`/v2/orders/${id}`, { method: 'DELETE', headers: { ...bearer(who.token), 'if-match': ifMatch } });
    assert.equal((await del(bob, '*')).status, 404);
    assert.equal((await del(alice, tag)).status, 412);
    assert.equal((await del(alice, await tagOf(id, VARIANTS[2]))).status, 204);
  });

  it('refuses a tag read before a change made straight in the database', async () => {
    const { id } = await newOrder();
    const tag = await tagOf(id);
    await t.server.db.sql`UPDATE order_items SET qty = 3 WHERE order_id = ${id} AND product_id = 1`;
    assert.equal((await patch(id, '{"status":"cancelled"}', alice, { 'if-match': tag })).status, 412);
  });
});
