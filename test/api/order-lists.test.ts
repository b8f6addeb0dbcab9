/**
 * The order collections (contract §4): GET /orders, /users/{id}/orders and
 * /order-items, with filters, multi-key sorts over ties, paging, and the
 * ownership rules of §6. The data is made here, with known ties.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodeCursor } from '../../src/http/cursor.ts';
import { bearer, startTestServer, type Account, type TestServer } from '../support/server.ts';

let t: TestServer;
let admin: Account;
let alice: Account;
let bob: Account;
interface Order {
  id: number;
  customerId: number;
  status: string;
  total: number;
  createdAt: string;
  updatedAt: string;
  items: { id: number; orderId: number }[];
}
let orders: Order[] = [];

const get = async (path: string, who: Account) => {
  const response = await t.fetch(path, { headers: bearer(who.token) });
  assert.equal(response.status, 200, `${path}: ${await response.clone().text()}`);
  return response.json();
};

before(async () => {
  t = await startTestServer();
  admin = await t.user('admin');
  alice = await t.user('customer');
  bob = await t.user('customer');
  // 12 orders: totals repeat (ties), statuses repeat, two customers.
  const plan: [Account, number, number, string][] = [
    [alice, 1, 2, 'pending'],
    [alice, 2, 1, 'paid'],
    [bob, 1, 2, 'pending'],
    [alice, 3, 1, 'cancelled'],
    [bob, 2, 1, 'paid'],
    [alice, 1, 2, 'shipped'],
    [bob, 3, 1, 'pending'],
    [alice, 2, 1, 'pending'],
    [bob, 1, 2, 'delivered'],
    [alice, 3, 1, 'pending'],
    [bob, 2, 1, 'pending'],
    [alice, 1, 2, 'paid'],
  ];
  for (const [who, productId, qty, status] of plan) {
    const response = await t.fetch('/v1/orders', {
      method: 'POST',
      headers: { ...bearer(who.token), 'content-type': 'application/json' },
      body: JSON.stringify({
        items: [
          { productId, qty },
          { productId: 10, qty: 1 },
        ],
      }),
    });
    const order = (await response.json()) as Order;
    if (status !== 'pending') await t.server.db.sql`UPDATE orders SET status = ${status} WHERE id = ${order.id}`;
    orders.push(order);
  }
  // Two creation times only, so createdAt sorts have ties that id must break.
  const half = orders.slice(0, 6).map((o) => o.id);
  await t.server.db.sql`UPDATE orders SET created_at = '2026-01-01T00:00:00Z' WHERE id = ANY(${half})`;
  await t.server.db.sql`UPDATE orders SET created_at = '2026-02-01T00:00:00Z' WHERE NOT (id = ANY(${half}))`;
  orders = (await get('/v1/orders?pageSize=100', admin)).data;
});
after(async () => {
  await t.close();
});

/** The ids the server should answer: `orders` filtered and sorted in JavaScript. */
function expected(filter: (o: Order) => boolean, ...keys: [keyof Order, 'asc' | 'desc'][]): number[] {
  const sorted = orders.filter(filter).sort((a, b) => {
    // id breaks ties in the direction of the last key (ascending by default).
    const tieBreak: [keyof Order, 'asc' | 'desc'] = ['id', keys.at(-1)?.[1] ?? 'asc'];
    for (const [key, dir] of [...keys, tieBreak]) {
      const x = a[key] as number | string;
      const y = b[key] as number | string;
      if (x < y) return dir === 'asc' ? -1 : 1;
      if (x > y) return dir === 'asc' ? 1 : -1;
    }
    return 0;
  });
  return sorted.map((o) => o.id);
}
const ids = (body: { data: { id: number }[] }) => body.data.map((o) => o.id);

describe('GET /orders', () => {
  it('gives an admin every order in id order, with items embedded', async () => {
    const body = await get('/v1/orders', admin);
    assert.deepEqual(
      ids(body),
      expected(() => true),
    );
    assert.equal(body.meta.total, 12);
    for (const order of body.data) {
      assert.equal(order.items.length, 2);
      assert.ok(order.items.every((i: { orderId: number }) => i.orderId === order.id));
    }
  });

  it('gives a customer only their own orders', async () => {
    const body = await get('/v1/orders?pageSize=100', alice);
    assert.deepEqual(
      ids(body),
      expected((o) => o.customerId === alice.id),
    );
    assert.equal(body.meta.total, 7);
  });

  it("answers a customer's filter on another customer with an empty page", async () => {
    const body = await get(`/v1/orders?customerId=${bob.id}`, alice);
    assert.deepEqual(body, { data: [], meta: { total: 0, page: 1, pageSize: 20, pageCount: 0 } });
  });

  it('filters by status, customerId and minTotal, combined with AND', async () => {
    assert.deepEqual(
      ids(await get('/v1/orders?status=pending&pageSize=100', admin)),
      expected((o) => o.status === 'pending'),
    );
    assert.deepEqual(
      ids(await get(`/v1/orders?customerId=${bob.id}`, admin)),
      expected((o) => o.customerId === bob.id),
    );
    assert.deepEqual(
      ids(await get('/v1/orders?minTotal=40', admin)),
      expected((o) => o.total >= 40),
    );
    assert.deepEqual(
      ids(await get('/v1/orders?minTotal=40.4', admin)),
      expected((o) => o.total >= 40.4),
    );
    assert.deepEqual(
      ids(await get(`/v1/orders?status=pending&customerId=${alice.id}&minTotal=30`, admin)),
      expected((o) => o.status === 'pending' && o.customerId === alice.id && o.total >= 30),
    );
  });

  describe('sorts over ties, with id as the last tie-breaker', () => {
    const cases: [string, [keyof Order, 'asc' | 'desc'][]][] = [
      ['total', [['total', 'asc']]],
      ['-total', [['total', 'desc']]],
      [
        '-total,id',
        [
          ['total', 'desc'],
          ['id', 'asc'],
        ],
      ],
      [
        '-total,-id',
        [
          ['total', 'desc'],
          ['id', 'desc'],
        ],
      ],
      ['createdAt', [['createdAt', 'asc']]],
      ['-createdAt', [['createdAt', 'desc']]],
      [
        '-createdAt,total',
        [
          ['createdAt', 'desc'],
          ['total', 'asc'],
        ],
      ],
      [
        'status,-total',
        [
          ['status', 'asc'],
          ['total', 'desc'],
        ],
      ],
      [
        '-status,createdAt,-id',
        [
          ['status', 'desc'],
          ['createdAt', 'asc'],
          ['id', 'desc'],
        ],
      ],
      ['-id', [['id', 'desc']]],
      ['updatedAt', [['updatedAt', 'asc']]],
    ];
    for (const [sort, keys] of cases) {
      it(`sort=${sort}`, async () => {
        assert.deepEqual(
          ids(await get(`/v1/orders?sort=${sort}&pageSize=100`, admin)),
          expected(() => true, ...keys),
        );
      });
    }
  });

  it('walks every page of a tied sort and sees each order exactly once', async () => {
    for (const sort of ['-total', 'status', '-createdAt,total']) {
      const seen: number[] = [];
      let page = 1;
      let pageCount = 1;
      do {
        const body = await get(`/v1/orders?sort=${sort}&pageSize=5&page=${page}`, admin);
        pageCount = body.meta.pageCount;
        seen.push(...ids(body));
        page += 1;
      } while (page <= pageCount);
      assert.equal(pageCount, 3);
      assert.deepEqual(
        [...seen].sort((a, b) => a - b),
        expected(() => true),
      );
      assert.equal(new Set(seen).size, 12, sort);
    }
  });

  it('links the pages: first, prev and last by number, next by cursor (contract §4)', async () => {
    const response = await t.fetch('/v1/orders?status=pending&pageSize=2&page=2', { headers: bearer(admin.token) });
    const pending = expected((o) => o.status === 'pending');
    // The cursor of page 3, after the last row of page 2: its id, for the default order.
    const cursor = /cursor=([A-Za-z0-9_-]+)>/.exec(response.headers.get('link') ?? '')?.[1] as string;
    const scope = { sort: [], filters: { status: 'pending' }, pageSize: 2, principal: `user ${admin.id}` };
    assert.deepEqual(decodeCursor([await t.cursorKey()], cursor, '/orders', scope, { id: 'bigint' }), {
      values: [String(pending[3])],
      page: 3,
    });
    assert.equal(
      response.headers.get('link'),
      '</v1/orders?status=pending&pageSize=2&page=1>; rel="first", ' +
        '</v1/orders?status=pending&pageSize=2&page=1>; rel="prev", ' +
        `</v1/orders?status=pending&pageSize=2&cursor=${cursor}>; rel="next", ` +
        '</v1/orders?status=pending&pageSize=2&page=3>; rel="last", </v2/orders>; rel="successor-version"',
    );
    assert.deepEqual((await response.json()).meta, {
      total: 6,
      page: 2,
      pageSize: 2,
      pageCount: 3,
      next: `/v1/orders?status=pending&pageSize=2&cursor=${cursor}`,
    });
    // The cursor page: page 3, the last; prev by number, no next.
    const third = await t.fetch(`/v1/orders?status=pending&pageSize=2&cursor=${cursor}`, {
      headers: bearer(admin.token),
    });
    assert.equal(
      third.headers.get('link'),
      '</v1/orders?status=pending&pageSize=2&page=1>; rel="first", ' +
        '</v1/orders?status=pending&pageSize=2&page=2>; rel="prev", ' +
        '</v1/orders?status=pending&pageSize=2&page=3>; rel="last", </v2/orders>; rel="successor-version"',
    );
    const body = await third.json();
    assert.deepEqual(
      body.data.map((o: { id: number }) => o.id),
      pending.slice(4),
    );
    assert.deepEqual(body.meta, { total: 6, page: 3, pageSize: 2, pageCount: 3 });
  });

  it('answers a page past the last with empty data and the true total', async () => {
    assert.deepEqual(await get('/v1/orders?status=paid&page=9', admin), {
      data: [],
      meta: { total: 3, page: 9, pageSize: 20, pageCount: 1 },
    });
  });

  describe('answers 400 invalid-query', () => {
    const cases: [string, string[]][] = [
      ['status=lost', ['status']],
      ['status=', ['status']],
      ['customerId=0', ['customerId']],
      ['customerId=abc', ['customerId']],
      ['minTotal=-1', ['minTotal']],
      ['minTotal=1e3', ['minTotal']],
      ['minTotal=10.123', ['minTotal']],
      ['minTotal=12345678901', ['minTotal']],
      ['sort=price', ['sort']],
      ['sort=total,-total', ['sort']],
      ['sort=,id', ['sort']],
      ['orderId=1', ['orderId']],
      ['status=paid&status=pending', ['status']],
      ['status=x&sort=y&page=0&limit=5', ['status', 'sort', 'page', 'limit']],
    ];
    for (const [qs, parameters] of cases) {
      it(`for ${qs}`, async () => {
        const response = await t.fetch(`/v1/orders?${qs}`, { headers: bearer(admin.token) });
        assert.equal(response.status, 400);
        const body = await response.json();
        assert.equal(body.type, '/problems/invalid-query');
        assert.deepEqual(
          body.errors.map((e: { parameter: string }) => e.parameter),
          parameters,
        );
      });
    }
  });
});

describe('GET /users/{id}/orders', () => {
  it("lists that user's orders with the same parameters", async () => {
    assert.deepEqual(
      ids(await get(`/v1/users/${bob.id}/orders?sort=-total`, admin)),
      expected((o) => o.customerId === bob.id, ['total', 'desc']),
    );
    assert.deepEqual(
      ids(await get(`/v1/users/${alice.id}/orders?status=pending`, alice)),
      expected((o) => o.customerId === alice.id && o.status === 'pending'),
    );
  });

  it("answers 404 for another customer's path and for an unknown user", async () => {
    for (const [path, who] of [
      [`/v1/users/${bob.id}/orders`, alice],
      ['/v1/users/99999999/orders', admin],
      ['/v1/users/99999999/orders', alice],
    ] as const) {
      const response = await t.fetch(path, { headers: bearer(who.token) });
      assert.equal(response.status, 404, path);
      assert.equal((await response.json()).type, '/problems/not-found');
    }
  });

  it('validates the query', async () => {
    const response = await t.fetch(`/v1/users/${alice.id}/orders?sort=name`, { headers: bearer(alice.token) });
    assert.equal(response.status, 400);
  });
});

describe('GET /order-items', () => {
  it("lists one order's items, in the shape they have inside the order", async () => {
    const order = orders.find((o) => o.customerId === alice.id) as Order & { items: unknown[] };
    const body = await get(`/v1/order-items?orderId=${order.id}`, alice);
    assert.deepEqual(body.data, order.items);
    assert.deepEqual(body.meta, { total: 2, page: 1, pageSize: 20, pageCount: 1 });
    const v2 = await get(`/v2/order-items?orderId=${order.id}`, alice);
    assert.deepEqual(v2.data[0].unitPrice, { amount: '12.50', currency: 'EUR' });
  });

  it('requires orderId from a customer', async () => {
    const response = await t.fetch('/v1/order-items', { headers: bearer(alice.token) });
    assert.equal(response.status, 400);
    assert.deepEqual((await response.json()).errors, [{ parameter: 'orderId', detail: 'is required for customers' }]);
  });

  it("answers a customer naming another customer's order with an empty page", async () => {
    const other = orders.find((o) => o.customerId === bob.id) as Order;
    assert.deepEqual((await get(`/v1/order-items?orderId=${other.id}`, alice)).data, []);
  });

  it('lists every item for an admin, in id order, sortable by -id', async () => {
    const all = await get('/v1/order-items?pageSize=100', admin);
    assert.equal(all.meta.total, 24);
    const allIds = ids(all);
    assert.deepEqual(
      allIds,
      [...allIds].sort((a, b) => a - b),
    );
    assert.deepEqual(ids(await get('/v1/order-items?pageSize=100&sort=-id', admin)), [...allIds].reverse());
  });

  it('answers 400 for undocumented parameters and sort keys', async () => {
    for (const qs of ['status=paid', 'sort=createdAt', 'orderId=x']) {
      assert.equal((await t.fetch(`/v1/order-items?${qs}`, { headers: bearer(admin.token) })).status, 400, qs);
    }
  });
});

describe('POST /users', () => {
  it('creates a user: 201, Location, the user', async () => {
    const response = await t.fetch('/v1/users', {
      method: 'POST',
      headers: { ...bearer(admin.token), 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'new.user@example.com', name: 'New User' }),
    });
    assert.equal(response.status, 201);
    const user = await response.json();
    assert.equal(response.headers.get('location'), `/v1/users/${user.id}`);
    assert.deepEqual(
      { ...user, id: 0, createdAt: '' },
      { id: 0, email: 'new.user@example.com', name: 'New User', role: 'customer', createdAt: '' },
    );
  });

  it('refuses a taken address, an unknown member and a bad role with 422', async () => {
    for (const [body, pointer] of [
      [{ email: 'NEW.USER@example.com', name: 'Again' }, '/email'],
      [{ email: 'x@example.com', name: 'X', isAdmin: true }, '/isAdmin'],
      [{ email: 'x@example.com', name: 'X', role: 'root' }, '/role'],
      [{ email: 'nope', name: 'X' }, '/email'],
      [{ email: 'x@example.com', name: '' }, '/name'],
    ] as const) {
      const response = await t.fetch('/v1/users', {
        method: 'POST',
        headers: { ...bearer(admin.token), 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      assert.equal(response.status, 422, JSON.stringify(body));
      assert.deepEqual(
        (await response.json()).errors.map((e: { pointer: string }) => e.pointer),
        [pointer],
      );
    }
  });

  it('refuses strings a database cannot store (U+0000, unpaired surrogates) with 422, never 500', async () => {
    for (const [body, pointer] of [
      ['{"email":"nul@example.com","name":"a\\u0000b"}', '/name'],
      ['{"email":"s@example.com","name":"a\\ud800b"}', '/name'],
      ['{"email":"k@example.com","name":"K","\\u0000":1}', '/\u0000'],
    ] as const) {
      const response = await t.fetch('/v1/users', {
        method: 'POST',
        headers: { ...bearer(admin.token), 'content-type': 'application/json' },
        body,
      });
      assert.equal(response.status, 422, body);
      assert.deepEqual(
        (await response.json()).errors.map((e: { pointer: string }) => e.pointer),
        [pointer],
      );
    }
  });

  it('refuses a customer, even one whose token has users:write: 403', async () => {
    const response = await t.fetch('/v1/users', {
      method: 'POST',
      headers: { ...bearer(alice.token), 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'sneaky@example.com', name: 'S' }),
    });
    assert.equal(response.status, 403);
    assert.equal((await response.json()).type, '/problems/forbidden');
  });
});
