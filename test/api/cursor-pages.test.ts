/**
 * Deep pages by keyset cursor (contract §4 "Deep pages", §11): on every page
 * collection, walking by the `next` links (a `cursor` after the first page)
 * returns exactly the rows of the walk by page number and of the order the
 * database gives, for every sort key in both directions and combined, over
 * ties (values shared by many rows, timestamps equal to the millisecond but
 * not the microsecond); rows written during a walk do not shift it; `page`
 * stops at 10,000 rows; every page has its number, a cursor page the one
 * its cursor carries, and a prev link by number while `page` reaches it; a
 * cursor is refused with other filters or sort, when tampered with, signed
 * with another key, or with `page`; and ownership still limits every page.
 * The data is written here by SQL, with known exact values.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { serviceTransaction as transaction } from '../support/database.ts';
import { encodeCursor } from '../../src/http/cursor.ts';
import { cursorPayload } from '../support/cursor.ts';
import { bearer, startTestServer, type Account, type TestServer } from '../support/server.ts';

let t: TestServer;
let admin: Account;
let alice: Account;
let bob: Account;
let carol: Account;
/** The key the server signs its cursors with (contract §4). */
let key: Uint8Array;

type KeyType = 'bigint' | 'numeric' | 'text' | 'timestamp';
/** A row as the database holds it: every sort key's exact value as text (timestamps to the microsecond). */
type Exact = Record<string, string>;

const US = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;
/** The exact rows of each collection, read by SQL (the API shows milliseconds only). */
const EXACT = {
  orders: `SELECT id::text, customer_id::text AS "customerId", status, total::text AS total,
                  to_char(created_at AT TIME ZONE 'UTC', ${US}) AS "createdAt",
                  to_char(updated_at AT TIME ZONE 'UTC', ${US}) AS "updatedAt"
           FROM orders`,
  items: `SELECT i.id::text, i.order_id::text AS "orderId", o.customer_id::text AS "customerId"
          FROM order_items i JOIN orders o ON o.id = i.order_id`,
  payments: `SELECT p.id::text, p.order_id::text AS "orderId",
                    to_char(p.created_at AT TIME ZONE 'UTC', ${US}) AS "createdAt"
             FROM payments p`,
  users: `SELECT id::text, to_char(created_at AT TIME ZONE 'UTC', ${US}) AS "createdAt" FROM users`,
  products: `SELECT id::text, to_char(created_at AT TIME ZONE 'UTC', ${US}) AS "createdAt" FROM products`,
  endpoints: `SELECT id::text, to_char(created_at AT TIME ZONE 'UTC', ${US}) AS "createdAt" FROM webhook_endpoints`,
  deliveries: `SELECT id::text, endpoint_id::text AS "endpointId",
                      to_char(created_at AT TIME ZONE 'UTC', ${US}) AS "createdAt"
               FROM webhook_deliveries`,
};
const TYPES: Record<string, KeyType> = {
  id: 'bigint',
  status: 'text',
  total: 'numeric',
  createdAt: 'timestamp',
  updatedAt: 'timestamp',
};

async function exact(table: keyof typeof EXACT): Promise<Exact[]> {
  return (await t.server.db.sql.unsafe(EXACT[table])) as unknown as Exact[];
}

/** contract §4, restated: `sort`'s keys up to id, which ends the order (appended in the last key's direction). */
function orderOf(sort: string): { key: string; descending: boolean }[] {
  const keys = sort === '' ? [] : sort.split(',').map((k) => ({ key: k.replace(/^-/, ''), descending: k[0] === '-' }));
  const id = keys.findIndex((k) => k.key === 'id');
  if (id >= 0) return keys.slice(0, id + 1);
  return [...keys, { key: 'id', descending: keys.at(-1)?.descending ?? false }];
}

function compareValues(type: KeyType, x: string, y: string): number {
  if (type === 'bigint') return BigInt(x) < BigInt(y) ? -1 : BigInt(x) > BigInt(y) ? 1 : 0;
  if (type === 'numeric') return Number(x) - Number(y);
  // Statuses are ASCII; these timestamps have one fixed width: text order is their order.
  return x < y ? -1 : x > y ? 1 : 0;
}

/** The ids of `rows` in the order of `sort`, as the database must give them. */
function expected(rows: readonly Exact[], sort: string): number[] {
  const order = orderOf(sort);
  return [...rows]
    .sort((a, b) => {
      for (const { key, descending } of order) {
        const c = compareValues(TYPES[key] as KeyType, a[key] as string, b[key] as string);
        if (c !== 0) return descending ? -c : c;
      }
      return 0;
    })
    .map((r) => Number(r.id));
}

interface Envelope {
  data: { id: number; customerId?: number }[];
  meta: { total: number; page: number; pageSize: number; pageCount: number; next?: string };
}

async function get(path: string, who?: Account): Promise<{ response: Response; body: Envelope }> {
  const response = await t.fetch(path, { headers: who ? bearer(who.token) : {} });
  assert.equal(response.status, 200, `${path}: ${await response.clone().text()}`);
  return { response, body: (await response.json()) as Envelope };
}

/** The cursor a next link carries. */
function cursorOf(next: string): string {
  return new URL(next, 'http://x').searchParams.get('cursor') as string;
}

/** What a cursor holds, opened under the server's key as the service opens it (src/http/cursor.ts). */
function payloadOf(cursor: string): { k: string[]; p: number } {
  return cursorPayload(cursor, key) as { k: string[]; p: number };
}

/** The position and page number a cursor holds. */
const heldBy = (cursor: string) => [valuesOf(cursor), pageOf(cursor)];

/** The values of the last row's keys a cursor holds. */
function valuesOf(cursor: string): string[] {
  return payloadOf(cursor).k;
}

/** The page number a cursor carries. */
function pageOf(cursor: string): number {
  return payloadOf(cursor).p;
}

/** `path` (a request's path and query) with page `page` in place of its cursor or page, as a link gives it. */
function withPage(path: string, page: number): string {
  const url = new URL(path, 'http://x');
  url.searchParams.delete('cursor');
  url.searchParams.set('page', String(page));
  return `${url.pathname}?${url.searchParams.toString()}`;
}

/**
 * The ids of every page of `path` (a query string ending in pageSize),
 * first by following `next` from the first page, then by page number; each
 * page's `Link` next and `meta.next` agree, each page has its number (1, 2, 3, …), each next cursor carries the
 * number after it, and each page after the first links prev to the one before it by number.
 */
async function walks(path: string, who?: Account): Promise<{ byCursor: number[]; byPage: number[]; total: number }> {
  const byCursor: number[] = [];
  let url: string | undefined = path;
  let first: Envelope['meta'] | undefined;
  for (let hops = 0; url !== undefined; hops++) {
    assert.ok(hops < 100, `${path}: the walk does not end`);
    const { response, body } = await get(url, who);
    first ??= body.meta;
    assert.equal(body.meta.total, first.total);
    assert.equal(body.meta.pageCount, first.pageCount);
    assert.equal(body.meta.page, hops + 1, url);
    const link = response.headers.get('link') as string;
    if (body.meta.next === undefined) assert.ok(!link.includes('rel="next"'), link);
    else {
      assert.ok(link.includes(`<${body.meta.next}>; rel="next"`), link);
      assert.equal(pageOf(cursorOf(body.meta.next)), hops + 2, body.meta.next);
    }
    if (hops === 0) assert.ok(!link.includes('rel="prev"'), link);
    else assert.ok(link.includes(`<${withPage(url, hops)}>; rel="prev"`), link);
    byCursor.push(...body.data.map((r) => r.id));
    url = body.meta.next;
  }
  const byPage: number[] = [];
  for (let page = 1; page <= (first as Envelope['meta']).pageCount; page++) {
    const { body } = await get(`${path}&page=${page}`, who);
    assert.equal(body.meta.page, page);
    byPage.push(...body.data.map((r) => r.id));
  }
  return { byCursor, byPage, total: (first as Envelope['meta']).total };
}

/** Asserts both walks of `path` give `ids`, in that order, each once. */
async function assertWalks(path: string, ids: number[], who?: Account): Promise<void> {
  const { byCursor, byPage, total } = await walks(path, who);
  assert.deepEqual(byCursor, ids, `${path}: by cursor`);
  assert.deepEqual(byPage, ids, `${path}: by page`);
  assert.equal(total, ids.length);
  assert.equal(new Set(byCursor).size, ids.length);
}

/** Three timestamps equal to the millisecond, one microsecond apart. */
const tied = (base: string, expr: string) => `'${base}'::timestamptz + ((${expr}) % 3) * interval '1 microsecond'`;

before(async () => {
  t = await startTestServer();
  admin = await t.user('admin');
  alice = await t.user('customer');
  bob = await t.user('customer');
  carol = await t.user('customer');
  key = await t.cursorKey();
  const sql = t.server.db.sql;
  // 45 orders of alice and bob: 5 statuses, 4 totals, 3 creation and 4 update times, each shared by many.
  await sql.unsafe(
    `INSERT INTO orders (customer_id, status, currency, total)
     SELECT CASE WHEN g % 3 = 0 THEN $2::bigint ELSE $1::bigint END,
            (ARRAY['pending', 'paid', 'shipped', 'delivered', 'cancelled'])[1 + (g * 7) % 5], 'EUR',
            (ARRAY[10.00, 10.00, 12.50, 99.99, 100.00, 12.50])[1 + (g * 5) % 6]
     FROM generate_series(1, 45) AS g`,
    [alice.id, bob.id],
  );
  // Items for the first 10 of them (a change of items moves updated_at: the times are set after).
  await sql.unsafe(
    `INSERT INTO order_items (order_id, product_id, qty, unit_price)
     SELECT o.id, p.id, 1, p.price
     FROM (SELECT id FROM orders WHERE customer_id IN ($1, $2) ORDER BY id LIMIT 10) o
     CROSS JOIN (SELECT id, price FROM products ORDER BY id LIMIT 3) p`,
    [alice.id, bob.id],
  );
  // The service's own transaction: the driver's sql.begin() needs pipelining, which a pooler run turns off.
  await transaction(sql, async (tx) => {
    await tx.unsafe('ALTER TABLE orders DISABLE TRIGGER orders_set_updated_at');
    await tx.unsafe(
      `UPDATE orders SET created_at = ${tied('2026-03-01T10:00:00.1234Z', 'id * 11')},
                         updated_at = '2026-03-02T10:00:00.5Z'::timestamptz
                                      + ((id * 13) % 4) * interval '1 microsecond'`,
    );
    await tx.unsafe('ALTER TABLE orders ENABLE TRIGGER orders_set_updated_at');
  });
  // 20 payments, one per order, at three tied times.
  await sql.unsafe(
    `INSERT INTO payments (order_id, amount, currency, created_at)
     SELECT o.id, o.total, o.currency, ${tied('2026-03-03T08:00:00.0007Z', 'o.id * 5')}
     FROM (SELECT * FROM orders WHERE customer_id IN ($1, $2) ORDER BY id LIMIT 20) o`,
    [alice.id, bob.id],
  );
  await sql.unsafe(
    `INSERT INTO users (email, name, created_at)
     SELECT 'cursor' || g || '@example.test', 'Cursor ' || g, ${tied('2026-01-01T00:00:00.0001Z', 'g * 7')}
     FROM generate_series(1, 15) AS g`,
  );
  await sql.unsafe(
    `INSERT INTO products (sku, name, price, currency, created_at)
     SELECT 'CUR-' || g, 'Cursor ' || g, 1.00, 'EUR', ${tied('2026-01-02T00:00:00.9990Z', 'g * 7')}
     FROM generate_series(1, 15) AS g`,
  );
  await sql.unsafe(
    `INSERT INTO webhook_endpoints (url, events, secret, created_at)
     SELECT 'https://example.com/hook' || g, ARRAY['payment.succeeded'], 'whsec_x',
            ${tied('2026-01-03T00:00:00.5Z', 'g * 7')}
     FROM generate_series(1, 12) AS g`,
  );
  // 15 delivered deliveries (the worker leaves them alone) of the first endpoint, and 3 of the second.
  await sql.unsafe(
    `WITH e AS (
       INSERT INTO events (type, data) SELECT 'payment.succeeded', '{}'::jsonb FROM generate_series(1, 15) RETURNING id
     ),
     w AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM webhook_endpoints ORDER BY id LIMIT 2)
     INSERT INTO webhook_deliveries (endpoint_id, event_id, status, created_at)
     SELECT w.id, e.id, 'delivered', ${tied('2026-01-04T00:00:00.25Z', 'e.id * 7')}
     FROM e JOIN w ON w.n = 1 OR e.id % 5 = 0`,
  );
});
after(async () => {
  await t.close();
});

const ORDER_SORTS = [
  'id',
  '-id',
  'status',
  '-status',
  'createdAt',
  '-createdAt',
  'updatedAt',
  '-updatedAt',
  'total',
  '-total',
  '-total,id',
  'total,-id',
  'status,-createdAt',
  '-status,createdAt,-id',
  'createdAt,-total',
  '-updatedAt,status',
  'updatedAt,-createdAt,total',
  'id,total',
];

describe('walking by cursor gives the rows of the walk by page, in the order of the database', () => {
  describe('GET /orders (admin)', () => {
    for (const sort of ORDER_SORTS) {
      it(`sort=${sort}`, async () => {
        await assertWalks(`/v1/orders?sort=${sort}&pageSize=7`, expected(await exact('orders'), sort), admin);
      });
    }
    it('the default order', async () => {
      await assertWalks('/v1/orders?pageSize=7', expected(await exact('orders'), ''), admin);
    });
  });

  describe('GET /orders with filters', () => {
    const cases: [string, string, (o: Exact) => boolean][] = [
      ['status=pending', '', (o) => o.status === 'pending'],
      ['status=paid', 'status,-createdAt', (o) => o.status === 'paid'],
      ['status=shipped', '-status,total', (o) => o.status === 'shipped'],
      ['minTotal=12.50', '-total,id', (o) => Number(o.total) >= 12.5],
      ['minTotal=99.99', 'total', (o) => Number(o.total) >= 99.99],
      ['customerId=BOB', '-updatedAt', (o) => o.customerId === String(bob.id)],
      [
        'customerId=ALICE&status=delivered',
        'createdAt',
        (o) => o.customerId === String(alice.id) && o.status === 'delivered',
      ],
    ];
    for (const [filters, sort, keep] of cases) {
      it(`${filters}${sort === '' ? '' : `&sort=${sort}`}`, async () => {
        const qs = filters.replace('BOB', String(bob.id)).replace('ALICE', String(alice.id));
        const rows = (await exact('orders')).filter(keep);
        assert.ok(rows.length > 3, 'more than one page');
        await assertWalks(
          `/v1/orders?${qs}${sort === '' ? '' : `&sort=${sort}`}&pageSize=3`,
          expected(rows, sort),
          admin,
        );
      });
    }
  });

  describe("a customer's own orders: GET /orders and GET /users/{id}/orders", () => {
    for (const sort of ['', '-createdAt', 'updatedAt', 'status', '-total,id', 'status,-updatedAt']) {
      it(`sort=${sort}`, async () => {
        const mine = (await exact('orders')).filter((o) => o.customerId === String(alice.id));
        const ids = expected(mine, sort);
        await assertWalks(`/v1/orders?sort=${sort}&pageSize=4`.replace('sort=&', ''), ids, alice);
        await assertWalks(`/v2/users/${alice.id}/orders?sort=${sort}&pageSize=4`.replace('sort=&', ''), ids, alice);
        await assertWalks(`/v1/users/${alice.id}/orders?sort=${sort}&pageSize=4`.replace('sort=&', ''), ids, admin);
      });
    }
  });

  describe('GET /order-items', () => {
    for (const sort of ['id', '-id']) {
      it(`sort=${sort}, as an admin and, within one order, as its customer`, async () => {
        const items = await exact('items');
        await assertWalks(`/v1/order-items?sort=${sort}&pageSize=4`, expected(items, sort), admin);
        const order = items.find((i) => i.customerId === String(alice.id)) as Exact;
        const own = items.filter((i) => i.orderId === order.orderId);
        await assertWalks(
          `/v1/order-items?orderId=${order.orderId}&sort=${sort}&pageSize=2`,
          expected(own, sort),
          alice,
        );
      });
    }
  });

  const others: [string, keyof typeof EXACT, () => Account | undefined, string[]][] = [
    [
      '/v1/payments',
      'payments',
      () => admin,
      ['id', '-id', 'createdAt', '-createdAt', 'createdAt,-id', '-createdAt,id'],
    ],
    ['/v1/users', 'users', () => admin, ['id', '-id', 'createdAt', '-createdAt', '-createdAt,id']],
    ['/v2/products', 'products', () => undefined, ['id', '-id', 'createdAt', '-createdAt', 'createdAt,-id']],
    ['/v1/webhook-endpoints', 'endpoints', () => admin, ['id', '-id', 'createdAt', '-createdAt', '-createdAt,id']],
  ];
  for (const [path, table, who, sorts] of others) {
    describe(`GET ${path}`, () => {
      for (const sort of sorts) {
        it(`sort=${sort}`, async () => {
          await assertWalks(`${path}?sort=${sort}&pageSize=4`, expected(await exact(table), sort), who());
        });
      }
    });
  }

  describe('GET /webhook-endpoints/{id}/deliveries', () => {
    for (const sort of ['id', '-id', 'createdAt', '-createdAt', 'createdAt,-id']) {
      it(`sort=${sort}`, async () => {
        const deliveries = await exact('deliveries');
        const endpoint = deliveries.map((d) => Number(d.endpointId)).sort((a, b) => a - b)[0] as number;
        const ids = expected(
          deliveries.filter((d) => d.endpointId === String(endpoint)),
          sort,
        );
        assert.equal(ids.length, 15);
        await assertWalks(`/v1/webhook-endpoints/${endpoint}/deliveries?sort=${sort}&pageSize=4`, ids, admin);
      });
    }
  });

  it('a customer walks the users collection: their own record only', async () => {
    await assertWalks('/v1/users?sort=-createdAt&pageSize=1', [alice.id], alice);
  });
});

describe('the cursor', () => {
  it('carries the database values of the last row: timestamps to the microsecond, totals as decimal text', async () => {
    const orders = await exact('orders');
    const ids = expected(orders, '-createdAt,total');
    const { body } = await get('/v1/orders?sort=-createdAt,total&pageSize=5', admin);
    const last = orders.find((o) => o.id === String(ids[4])) as Exact;
    // The API shows milliseconds; the three creation times differ only in their microseconds.
    assert.equal((body.data[4] as unknown as { createdAt: string }).createdAt, '2026-03-01T10:00:00.123Z');
    assert.match(last.createdAt as string, /^2026-03-01T10:00:00\.12340[0-2]Z$/);
    assert.deepEqual(valuesOf(cursorOf(body.meta.next as string)), [last.createdAt, last.total, last.id]);
  });

  it('links the pages of a page by number: first, prev and last by number, next by cursor', async () => {
    const pending = (await exact('orders')).filter((o) => o.status === 'pending');
    const ids = expected(pending, '');
    const response = await t.fetch('/v1/orders?status=pending&pageSize=2&page=2', { headers: bearer(admin.token) });
    // The cursor of page 3: after the last row of page 2.
    const cursor = /cursor=([A-Za-z0-9_-]+)>/.exec(response.headers.get('link') ?? '')?.[1] as string;
    assert.deepEqual(heldBy(cursor), [[String(ids[3])], 3]);
    const last = Math.ceil(ids.length / 2);
    assert.equal(
      response.headers.get('link'),
      '</v1/orders?status=pending&pageSize=2&page=1>; rel="first", ' +
        '</v1/orders?status=pending&pageSize=2&page=1>; rel="prev", ' +
        `</v1/orders?status=pending&pageSize=2&cursor=${cursor}>; rel="next", ` +
        `</v1/orders?status=pending&pageSize=2&page=${last}>; rel="last", </v2/orders>; rel="successor-version"`,
    );
    assert.deepEqual((await response.json()).meta, {
      total: ids.length,
      page: 2,
      pageSize: 2,
      pageCount: last,
      next: `/v1/orders?status=pending&pageSize=2&cursor=${cursor}`,
    });
  });

  it("links a cursor page: first, prev and last by number, next by cursor; its number is its cursor's", async () => {
    const orders = await exact('orders');
    const ids = expected(orders, '-total');
    /** What the cursor of page `page` of 10 rows, after the row `ids[i]`, holds. */
    const cursorAfter = (i: number, page: number) => {
      const row = orders.find((o) => o.id === String(ids[i])) as Exact;
      return [[row.total as string, row.id as string], page];
    };
    const first = await get('/v2/orders?sort=-total&pageSize=10', admin);
    assert.equal(first.body.meta.page, 1);
    const firstCursor = cursorOf(first.body.meta.next as string);
    assert.equal(first.body.meta.next, `/v2/orders?sort=-total&pageSize=10&cursor=${firstCursor}`);
    assert.deepEqual(heldBy(firstCursor), cursorAfter(9, 2));
    const response = await t.fetch(first.body.meta.next as string, { headers: bearer(admin.token) });
    const body = (await response.json()) as Envelope;
    const next = cursorOf(body.meta.next as string);
    assert.deepEqual(heldBy(next), cursorAfter(19, 3));
    const pages = Math.ceil(ids.length / 10);
    assert.deepEqual(
      body.data.map((o) => o.id),
      ids.slice(10, 20),
    );
    assert.deepEqual(body.meta, {
      total: ids.length,
      page: 2,
      pageSize: 10,
      pageCount: pages,
      next: `/v2/orders?sort=-total&pageSize=10&cursor=${next}`,
    });
    assert.equal(
      response.headers.get('link'),
      '</v2/orders?sort=-total&pageSize=10&page=1>; rel="first", ' +
        '</v2/orders?sort=-total&pageSize=10&page=1>; rel="prev", ' +
        `</v2/orders?sort=-total&pageSize=10&cursor=${next}>; rel="next", ` +
        `</v2/orders?sort=-total&pageSize=10&page=${pages}>; rel="last"`,
    );
  });

  it('numbers the pages of a walk by next links 1, 2, 3, …: each cursor carries the number of its page', async () => {
    const ids = expected(await exact('orders'), '-total');
    const path = '/v1/orders?sort=-total&pageSize=5';
    const pages = Math.ceil(ids.length / 5);
    assert.ok(pages >= 5, `${pages} pages: at least 4 cursor pages`);
    const numbers: number[] = [];
    const seen: number[] = [];
    let url: string | undefined = path;
    while (url !== undefined) {
      const { response, body } = await get(url, admin);
      const page = numbers.length + 1;
      numbers.push(body.meta.page);
      seen.push(...body.data.map((o) => o.id));
      // The rows of the page by that number.
      assert.deepEqual(
        body.data.map((o) => o.id),
        ids.slice((page - 1) * 5, page * 5),
        url,
      );
      const cursor = page === pages ? undefined : cursorOf(body.meta.next as string);
      if (cursor !== undefined) assert.equal(pageOf(cursor), page + 1);
      assert.equal(body.meta.next, cursor === undefined ? undefined : `${path}&cursor=${cursor}`);
      assert.equal(
        response.headers.get('link'),
        '</v1/orders?sort=-total&pageSize=5&page=1>; rel="first", ' +
          (page === 1 ? '' : `</v1/orders?sort=-total&pageSize=5&page=${page - 1}>; rel="prev", `) +
          (cursor === undefined ? '' : `</v1/orders?sort=-total&pageSize=5&cursor=${cursor}>; rel="next", `) +
          `</v1/orders?sort=-total&pageSize=5&page=${pages}>; rel="last", </v2/orders>; rel="successor-version"`,
      );
      url = body.meta.next;
    }
    assert.deepEqual(
      numbers,
      Array.from({ length: pages }, (_, i) => i + 1),
    );
    assert.deepEqual(seen, ids);
  });

  it('has no next on the last page, and a cursor page past every row is empty with the exact total', async () => {
    const ids = expected(await exact('products'), '');
    const lastPage = await get(`/v1/products?pageSize=${ids.length}`);
    assert.equal(lastPage.body.meta.next, undefined);
    const pages = Math.ceil(ids.length / 20);
    const beyond = encodeCursor(
      key,
      '/products',
      { sort: [], filters: {}, pageSize: 20, principal: 'anyone' },
      [String(ids.at(-1))],
      pages + 1,
    );
    const { response, body } = await get(`/v1/products?cursor=${beyond}`);
    assert.deepEqual(body, {
      data: [],
      meta: { total: ids.length, page: pages + 1, pageSize: 20, pageCount: pages },
    });
    assert.equal(
      response.headers.get('link'),
      `</v1/products?page=1>; rel="first", </v1/products?page=${pages}>; rel="prev", ` +
        `</v1/products?page=${pages}>; rel="last", </v2/products>; rel="successor-version"`,
    );
  });

  it('serves the same collection in the other version; another pageSize is refused (bound to its cursor)', async () => {
    const ids = expected(await exact('orders'), 'status');
    const { body } = await get('/v1/orders?sort=status&pageSize=5', admin);
    const next = (body.meta.next as string).replace('/v1/', '/v2/');
    const page = (await get(next, admin)).body;
    assert.deepEqual(
      page.data.map((o) => o.id),
      ids.slice(5, 10),
    );
    assert.equal(page.meta.page, 2);
    const resized = await t.fetch(next.replace('pageSize=5', 'pageSize=8'), { headers: bearer(admin.token) });
    assert.equal(resized.status, 400);
  });
});

describe('a walk is not shifted by rows written meanwhile', () => {
  it('rows written behind the position move nothing; ahead of it, the walk sees the rows as they are', async () => {
    const sql = t.server.db.sql;
    const made = (
      (await sql.unsafe(
        `INSERT INTO orders (customer_id, status, currency, total, created_at)
         SELECT $1, 'pending', 'EUR', 10, '2026-04-01T00:00:00.000001Z'::timestamptz + g * interval '1 second'
         FROM generate_series(1, 12) AS g RETURNING id`,
        [carol.id],
      )) as unknown as { id: number }[]
    ).map((o) => o.id);
    const path = '/v1/orders?sort=-createdAt&pageSize=4';
    const page1 = await get(path, carol);
    const page2 = await get(page1.body.meta.next as string, carol);
    assert.equal(page1.body.meta.page, 1);
    assert.equal(page2.body.meta.page, 2);
    // Newest first: the last made first.
    const seen = [...page1.body.data, ...page2.body.data].map((o) => o.id);
    assert.deepEqual(seen, made.slice(4).reverse());
    // Two newer orders (behind the position), one older than all (ahead of it), one deleted behind and one ahead.
    const [newer1, newer2, older] = (
      (await sql.unsafe(
        `INSERT INTO orders (customer_id, status, currency, total, created_at)
         VALUES ($1, 'pending', 'EUR', 10, '2026-05-01T00:00:00Z'), ($1, 'pending', 'EUR', 10, '2026-05-02T00:00:00Z'),
                ($1, 'pending', 'EUR', 10, '2026-03-01T00:00:00Z')
         RETURNING id`,
        [carol.id],
      )) as unknown as { id: number }[]
    ).map((o) => o.id);
    await sql.unsafe('DELETE FROM orders WHERE id = ANY($1::bigint[])', [[made[11], made[1]] as number[]]);
    const rest: number[] = [];
    const numbers: number[] = [];
    for (let url = page2.body.meta.next; url !== undefined; ) {
      const { body } = await get(url, carol);
      assert.equal(body.meta.total, 13);
      numbers.push(body.meta.page);
      rest.push(...body.data.map((o) => o.id));
      url = body.meta.next;
    }
    assert.deepEqual(rest, [made[3], made[2], made[0], older]);
    // The walk's pages are numbered on from page 2, as its cursors carry them.
    assert.deepEqual(numbers, [3]);
    // By page number the same changes shift the rows by one: the third page repeats the last row of the second.
    assert.deepEqual(
      (await get(`${path}&page=1`, carol)).body.data.map((o) => o.id),
      [newer2, newer1, made[10], made[9]],
    );
    assert.deepEqual(
      (await get(`${path}&page=3`, carol)).body.data.map((o) => o.id),
      [made[4], made[3], made[2], made[0]],
    );
  });
});

describe('page reaches at most 10,000 rows deep', () => {
  const deep = (max: number, size: number) => ({
    parameter: 'page',
    detail:
      `must be at most ${max} with pageSize ${size}: page reaches at most 10,000 rows deep; ` +
      "follow the next link's cursor to go further",
  });
  const refused: [string, ReturnType<typeof deep>][] = [
    ['page=501', deep(500, 20)],
    ['page=101&pageSize=100', deep(100, 100)],
    ['pageSize=1&page=10001', deep(10000, 1)],
    ['page=3335&pageSize=3', deep(3334, 3)],
    ['page=9007199254740993', deep(500, 20)],
    ['page=100000', deep(500, 20)],
  ];
  for (const [qs, error] of refused) {
    it(`refuses ${qs} with 400 invalid-query naming the cursor`, async () => {
      for (const path of ['/v1/orders', '/v1/order-items', '/v1/payments', '/v1/users', '/v1/webhook-endpoints']) {
        const response = await t.fetch(`${path}?${qs}`, { headers: bearer(admin.token) });
        assert.equal(response.status, 400, path);
        const body = await response.json();
        assert.equal(body.type, '/problems/invalid-query');
        assert.deepEqual(body.errors, [error]);
      }
      const products = await t.fetch(`/v1/products?${qs}`);
      assert.deepEqual((await products.json()).errors, [error]);
    });
  }
  it('answers the deepest pages allowed (page=10000&pageSize=1, page=3334&pageSize=3, page=500)', async () => {
    for (const qs of ['page=10000&pageSize=1', 'page=3334&pageSize=3', 'page=500', 'page=100&pageSize=100']) {
      const { body } = await get(`/v1/orders?${qs}`, admin);
      assert.deepEqual(body.data, [], qs);
    }
  });
});

describe('a cursor is refused with 400 invalid-query naming it', () => {
  const refusal = async (path: string, who: Account | undefined, detail: string) => {
    const response = await t.fetch(path, { headers: who ? bearer(who.token) : {} });
    assert.equal(response.status, 400, path);
    const body = await response.json();
    assert.equal(body.type, '/problems/invalid-query');
    assert.deepEqual(body.errors, [{ parameter: 'cursor', detail }]);
  };
  const OTHER =
    'was made for other filters, another sort or page size, or another client; keep those of the link that gave it';
  const MALFORMED = "is not a cursor of this collection; pass the next link's cursor exactly as given";

  it('with other filters, another sort, or on another collection', async () => {
    const { body } = await get('/v1/orders?status=pending&sort=-total&pageSize=2', admin);
    const cursor = cursorOf(body.meta.next as string);
    await refusal(`/v1/orders?status=paid&sort=-total&cursor=${cursor}`, admin, OTHER);
    await refusal(`/v1/orders?sort=-total&cursor=${cursor}`, admin, OTHER);
    await refusal(`/v1/orders?status=pending&minTotal=1&sort=-total&cursor=${cursor}`, admin, OTHER);
    await refusal(`/v1/orders?status=pending&sort=total&cursor=${cursor}`, admin, OTHER);
    await refusal(`/v1/orders?status=pending&sort=-total,id&cursor=${cursor}`, admin, OTHER);
    await refusal(`/v1/users/${alice.id}/orders?status=pending&sort=-total&cursor=${cursor}`, admin, OTHER);
    await refusal(`/v1/orders?status=pending&sort=-total&pageSize=3&cursor=${cursor}`, admin, OTHER);
    // The same order said otherwise is the same order.
    await get(`/v1/orders?status=pending&sort=-total,-id&pageSize=2&cursor=${cursor}`, admin);
    const items = cursorOf((await get('/v1/order-items?pageSize=1', admin)).body.meta.next as string);
    await refusal(`/v1/payments?cursor=${items}`, admin, OTHER);
  });

  it('with page', async () => {
    const { body } = await get('/v1/orders?pageSize=2', admin);
    const response = await t.fetch(`${body.meta.next}&page=2`, { headers: bearer(admin.token) });
    assert.equal(response.status, 400);
    assert.deepEqual((await response.json()).errors, [
      { parameter: 'cursor', detail: 'cannot be given with page: the cursor carries its page number' },
    ]);
  });

  it('when changed, cut short, not base64url, too long or repeated', async () => {
    const cursor = cursorOf((await get('/v1/orders?sort=createdAt&pageSize=2', admin)).body.meta.next as string);
    const flipped = (cursor[0] === 'A' ? 'B' : 'A') + cursor.slice(1);
    for (const bad of [
      `${cursor.slice(0, 10)}${cursor[10] === 'x' ? 'y' : 'x'}${cursor.slice(11)}`,
      flipped,
      cursor.slice(0, -3),
      `${cursor}A`,
      `${cursor}=`,
      `${cursor.slice(0, 20)}.${cursor.slice(20)}`,
      '',
      'not%20a%20cursor',
      '%FF%FE',
      'x'.repeat(513),
      Buffer.from('{"v":1}').toString('base64url'),
      Buffer.from('[1,2,3]').toString('base64url'),
      Buffer.from([0xff, 0xfe, 0x7b]).toString('base64url'),
    ])
      await refusal(`/v1/orders?sort=createdAt&cursor=${bad}`, admin, MALFORMED);
    const twice = await t.fetch(`/v1/orders?sort=createdAt&cursor=${cursor}&cursor=${cursor}`, {
      headers: bearer(admin.token),
    });
    assert.deepEqual((await twice.json()).errors, [{ parameter: 'cursor', detail: 'must be given once' }]);
  });

  it('when a byte of it is changed, or it was sealed under another key', async () => {
    const first = await get('/v1/orders?sort=createdAt&pageSize=2', admin);
    const next = first.body.meta.next as string;
    const cursor = cursorOf(next);
    // The cursor the server made opens under its key: the position and page 2.
    assert.equal(pageOf(cursor), 2);
    await get(next, admin);
    const bytes = Buffer.from(cursor, 'base64url');
    bytes[bytes.length - 1] = (bytes[bytes.length - 1] as number) ^ 1;
    const changed = bytes.toString('base64url');
    // The same position sealed under another key.
    const scope = {
      sort: [{ key: 'createdAt', descending: false }],
      filters: {},
      pageSize: 2,
      principal: `user ${admin.id}`,
    };
    const otherKey = encodeCursor(new Uint8Array(32).fill(9), '/orders', scope, valuesOf(cursor), 2);
    for (const bad of [changed, otherKey])
      await refusal(`/v1/orders?sort=createdAt&pageSize=2&cursor=${bad}`, admin, MALFORMED);
  });

  describe('when its values are not of their keys types: before any SQL, never a 500', () => {
    const scope = (sort: string, filters: Record<string, unknown> = {}) => ({
      sort: sort.split(',').map((k) => ({ key: k.replace(/^-/, ''), descending: k[0] === '-' })),
      filters,
      pageSize: 20,
      principal: `user ${admin.id}`,
    });
    const cases: [string, string, string[]][] = [
      ['createdAt', 'createdAt', ['2026-02-30T00:00:00.000000Z', '1']],
      ['createdAt', 'createdAt', ['2026-13-01T00:00:00.000000Z', '1']],
      ['createdAt', 'createdAt', ['2026-01-01T24:00:00.000000Z', '1']],
      ['createdAt', 'createdAt', ['2026-01-01T00:00:60.000000Z', '1']],
      ['createdAt', 'createdAt', ['0000-01-01T00:00:00.000000Z', '1']],
      ['createdAt', 'createdAt', ['2026-01-01T00:00:00.000Z', '1']],
      ['createdAt', 'createdAt', ['2026-01-01 00:00:00+00', '1']],
      ['createdAt', 'createdAt', ['infinity', '1']],
      ['createdAt', 'createdAt', ['2026-01-01T00:00:00.000000Z', '0']],
      ['createdAt', 'createdAt', ['2026-01-01T00:00:00.000000Z', '9223372036854775808']],
      ['createdAt', 'createdAt', ['2026-01-01T00:00:00.000000Z', '-1']],
      ['createdAt', 'createdAt', ['2026-01-01T00:00:00.000000Z']],
      ['createdAt', 'createdAt', ['2026-01-01T00:00:00.000000Z', '1', '2']],
      ['-total', '-total', ['NaN', '1']],
      ['-total', '-total', ['1e5', '1']],
      ['-total', '-total', ['12,50', '1']],
      ['status', 'status', ['pa\u0000id', '1']],
      ['status', 'status', ['\ud800', '1']],
      ['status', 'status', ['x'.repeat(257), '1']],
      ['', 'id', ['1.0']],
    ];
    for (const [sort, made, values] of cases) {
      it(`${JSON.stringify(values)} for sort=${sort}`, async () => {
        const cursor = encodeCursor(key, '/orders', scope(made), values, 2);
        await refusal(`/v1/orders?${sort === '' ? '' : `sort=${sort}&`}cursor=${cursor}`, admin, MALFORMED);
      });
    }
    it('takes the extremes PostgreSQL takes', async () => {
      for (const [sort, values] of [
        ['createdAt', ['2024-02-29T23:59:59.999999Z', '9223372036854775807']],
        ['createdAt', ['0001-01-01T00:00:00.000000Z', '1']],
        ['-total', ['99999999999999999999.99999999999999999999', '1']],
        ['status', ['zzz', '1']],
      ] as const) {
        const cursor = encodeCursor(key, '/orders', scope(sort), values, 2);
        await get(`/v1/orders?sort=${sort}&cursor=${cursor}`, admin);
      }
    });
  });
});

describe('ownership applies to every cursor page', () => {
  it("a cursor is its client's: another's (or one with another page size) is refused, naming why", async () => {
    const { body } = await get('/v1/orders?sort=-total&pageSize=25', admin);
    for (const who of [alice, bob]) {
      const response = await t.fetch(body.meta.next as string, { headers: bearer(who.token) });
      assert.equal(response.status, 400);
      assert.deepEqual(((await response.json()) as { errors: unknown[] }).errors, [
        {
          parameter: 'cursor',
          detail:
            'was made for other filters, another sort or page size, or another client; keep those of the link ' +
            'that gave it',
        },
      ]);
    }
    const resized = await t.fetch(`${body.meta.next}`.replace('pageSize=25', 'pageSize=100'), {
      headers: bearer(admin.token),
    });
    assert.equal(resized.status, 400);
    assert.equal((await get(body.meta.next as string, admin)).body.meta.page, 2);
  });

  it("a customer's cursor of their order's items is refused to another customer", async () => {
    const items = await exact('items');
    const bobs = items.find((i) => i.customerId === String(bob.id)) as Exact;
    const walk = await walks(`/v1/order-items?orderId=${bobs.orderId}&pageSize=1`, bob);
    assert.ok(walk.byCursor.length > 1);
    const { body } = await get(`/v1/order-items?orderId=${bobs.orderId}&pageSize=1`, bob);
    const response = await t.fetch(body.meta.next as string, { headers: bearer(alice.token) });
    assert.equal(response.status, 400);
  });
});

describe('deeper than page reaches, by cursor only', () => {
  it('a list of 10,001 rows: no last link, page 10,001 refused, its row reached by cursor', async () => {
    const dave = await t.user('customer');
    await t.server.db.sql.unsafe(
      `INSERT INTO orders (customer_id, status, currency, total) SELECT $1, 'paid', 'EUR', 1
       FROM generate_series(1, 10001)`,
      [dave.id],
    );
    const ids = expected(
      (await exact('orders')).filter((o) => o.customerId === String(dave.id)),
      '',
    );
    assert.equal(ids.length, 10_001);
    /** What the cursor of page `page` of dave's orders by one, after the row `ids[i]`, holds. */
    const cursorAfter = (i: number, page: number) => [[String(ids[i])], page];
    const { response, body } = await get('/v1/orders?pageSize=1', dave);
    assert.deepEqual(body.meta, {
      total: 10_001,
      page: 1,
      pageSize: 1,
      pageCount: 10_001,
      next: `/v1/orders?pageSize=1&cursor=${cursorOf(body.meta.next as string)}`,
    });
    assert.deepEqual(heldBy(cursorOf(body.meta.next as string)), cursorAfter(0, 2));
    assert.equal(
      response.headers.get('link'),
      `</v1/orders?pageSize=1&page=1>; rel="first", <${body.meta.next}>; rel="next", ` +
        '</v2/orders>; rel="successor-version"',
    );
    const deepest = await get('/v1/orders?pageSize=1&page=10000', dave);
    assert.deepEqual(
      deepest.body.data.map((o) => o.id),
      [ids[9_999]],
    );
    assert.equal(deepest.body.meta.page, 10_000);
    assert.deepEqual(heldBy(cursorOf(deepest.body.meta.next as string)), cursorAfter(9_999, 10_001));
    const refused = await t.fetch('/v1/orders?pageSize=1&page=10001', { headers: bearer(dave.token) });
    assert.equal(refused.status, 400);
    const last = await get(deepest.body.meta.next as string, dave);
    assert.deepEqual(last.body, {
      data: [{ ...last.body.data[0], id: ids[10_000] }],
      meta: { total: 10_001, page: 10_001, pageSize: 1, pageCount: 10_001 },
    });
    // Page 10,000 is within reach of page: the cursor page 10,001 links prev to it.
    assert.equal(
      last.response.headers.get('link'),
      '</v1/orders?pageSize=1&page=1>; rel="first", </v1/orders?pageSize=1&page=10000>; rel="prev", ' +
        '</v2/orders>; rel="successor-version"',
    );
    // One more row: page 10,001 gets a next, and the cursor page 10,002 has no prev (page 10,001 is out of reach).
    const [{ id: newest }] = (await t.server.db.sql.unsafe(
      `INSERT INTO orders (customer_id, status, currency, total) VALUES ($1, 'paid', 'EUR', 1) RETURNING id`,
      [dave.id],
    )) as unknown as [{ id: string | number }];
    const again = await get(deepest.body.meta.next as string, dave);
    assert.equal(again.body.meta.page, 10_001);
    assert.equal(pageOf(cursorOf(again.body.meta.next as string)), 10_002);
    assert.equal(
      again.response.headers.get('link'),
      '</v1/orders?pageSize=1&page=1>; rel="first", </v1/orders?pageSize=1&page=10000>; rel="prev", ' +
        `<${again.body.meta.next}>; rel="next", </v2/orders>; rel="successor-version"`,
    );
    const beyond = await get(again.body.meta.next as string, dave);
    assert.deepEqual(beyond.body, {
      data: [{ ...beyond.body.data[0], id: Number(newest) }],
      meta: { total: 10_002, page: 10_002, pageSize: 1, pageCount: 10_002 },
    });
    assert.equal(
      beyond.response.headers.get('link'),
      '</v1/orders?pageSize=1&page=1>; rel="first", </v2/orders>; rel="successor-version"',
    );
  });
});
