/**
 * The order representation the database builds (GetOrderJson, sql/queries/orders.sql)
 * is byte for byte the one src/orders/representation.ts and JSON.stringify
 * give for the same row, in both API versions: on orders with no item, many
 * items, money with and without cents (0, 10.00, 59.90, the largest
 * numeric(12,2)), and times with microseconds on each side of a millisecond.
 * GET /orders/{id} sends the database's text; the lists and the writes send
 * the service's; so a client sees one representation either way.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { orderRepresentation } from '../../src/orders/representation.ts';
import { bearer, startTestServer, type Account, type TestServer } from '../support/server.ts';

let t: TestServer;
let alice: Account;

before(async () => {
  t = await startTestServer();
  alice = await t.user('customer');
});
after(async () => {
  await t.close();
});

/** Creates an order of alice's directly in SQL, with the given items' prices, total and times. */
async function insertOrder(
  prices: readonly string[],
  createdAt: string,
  updatedAt: string,
  status = 'pending',
): Promise<number> {
  const sql = t.server.db.sql;
  const total = prices.reduce((sum, p, i) => sum + Math.round(Number(p) * 100) * (i + 1), 0) / 100;
  const [order] = await sql<{ id: number }[]>`
    INSERT INTO orders (customer_id, status, currency, total, created_at, updated_at)
    VALUES (${alice.id}, ${status}, 'EUR', ${total.toFixed(2)}::numeric,
            ${createdAt}::timestamptz, ${updatedAt}::timestamptz)
    RETURNING id`;
  for (const [i, price] of prices.entries()) {
    const [product] = await sql<{ id: number }[]>`
      INSERT INTO products (sku, name, price, currency)
      VALUES (${`JSON-${order!.id}-${i}`}, 'Test', ${price}::numeric, 'EUR') RETURNING id`;
    await sql`INSERT INTO order_items (order_id, product_id, qty, unit_price)
      VALUES (${order!.id}, ${product!.id}, ${i + 1}, ${price}::numeric)`;
  }
  // The item triggers touched the row: put the times back as asked.
  await sql`UPDATE orders SET created_at = ${createdAt}::timestamptz WHERE id = ${order!.id}`;
  await sql`ALTER TABLE orders DISABLE TRIGGER USER`;
  try {
    await sql`UPDATE orders SET updated_at = ${updatedAt}::timestamptz WHERE id = ${order!.id}`;
  } finally {
    await sql`ALTER TABLE orders ENABLE TRIGGER USER`;
  }
  return order!.id;
}

const ORDERS: [string, string[], string, string][] = [
  ['no item', [], '2026-01-01 00:00:00+00', '2026-01-01 00:00:00+00'],
  ['one item with cents', ['59.90'], '2026-03-04 05:06:07.123456+00', '2026-03-04 05:06:07.999999+00'],
  ['whole amounts and zero', ['10.00', '0.00', '100.00'], '2026-12-31 23:59:59.9995+00', '2027-01-01 00:00:00.0005+00'],
  [
    'a one-cent price and the largest total',
    ['0.01', '999999.99'],
    '1999-07-08 09:10:11.5+02',
    '2030-02-03 04:05:06.000001-05',
  ],
  [
    'many items',
    Array.from({ length: 12 }, (_, i) => `${i + 1}.${String(i * 7).padStart(2, '0')}`),
    '2026-06-15 12:00:00.100+00',
    '2026-06-15 12:00:00.100+00',
  ],
];

describe('GetOrderJson and GetOrderJsonV2, alone and batched', () => {
  for (const [name, prices, createdAt, updatedAt] of ORDERS) {
    it(`gives the bytes of representation.ts: ${name}`, async () => {
      const id = await insertOrder(prices, createdAt, updatedAt);
      const db = t.server.db;
      const row = await db.one('GetOrder', [id, null]);
      for (const version of [1, 2] as const) {
        const fromSql = (
          version === 1 ? await db.one('GetOrderJson', [id, null]) : await db.one('GetOrderJsonV2', [id, null])
        ).body;
        assert.equal(fromSql, JSON.stringify(orderRepresentation(row, version)), `version ${version}`);
        // The batched read of the same order (src/db/batch.ts), in its first and a later place: the same bytes.
        const batched = await db.many(version === 1 ? 'GetOrderJsonBatch' : 'GetOrderJsonV2Batch', [
          [id, id],
          [null, null],
        ]);
        assert.deepEqual(
          batched.map((r) => [r.n, r.body]),
          [
            [1, fromSql],
            [2, fromSql],
          ],
          `batched, version ${version}`,
        );
      }
    });
  }

  it('is what GET /orders/{id} sends, and the same order as the list shows it', async () => {
    const id = await insertOrder(['12.30', '4.00'], '2026-05-05 05:05:05.555555+00', '2026-05-06 06:06:06.666666+00');
    for (const version of [1, 2]) {
      const one = await t.fetch(`/v${version}/orders/${id}`, { headers: bearer(alice.token) });
      assert.equal(one.status, 200);
      const text = await one.text();
      assert.equal(one.headers.get('content-length'), String(Buffer.byteLength(text)));
      const list = await t.fetch(`/v${version}/orders?sort=-id&pageSize=1`, { headers: bearer(alice.token) });
      const listed = (await list.json()) as { data: unknown[] };
      assert.equal(JSON.stringify(listed.data[0]), text, `version ${version}`);
    }
  });
});
