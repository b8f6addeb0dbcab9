/**
 * `EXPLAIN ANALYZE` of every list query shape (issue 7), composed by the
 * same code the handlers use, on the database of DATABASE_URL. Prints
 * Markdown: `node --import tsx bench/explain.ts > plans.md`.
 */
import { openDatabase } from '../src/db/database.ts';
import { orderBy, parseListQuery, where } from '../src/http/list-query.ts';
import { ORDER_LIST, orderListSql } from '../src/orders/orders.ts';

const db = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: './data-bench', poolMax: 1 });
const [{ n: orders }] = (await db.sql`SELECT count(*)::int AS n FROM orders`) as unknown as [{ n: number }];
const [{ id: busy }] = (await db.sql`SELECT customer_id AS id FROM orders GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`) as unknown as [{ id: number }];
const [{ id: someOrder }] = (await db.sql`SELECT max(id) / 2 AS id FROM orders`) as unknown as [{ id: number }];

function compose(statement: string, fragments: Record<string, string>): string {
  return db.statement(statement).text.replace(/\{\{([a-zA-Z]+)\}\}/g, (_, key: string) => fragments[key] as string);
}

const shapes: [string, string, Record<string, string>, unknown[]][] = [];
const orderShape = (label: string, qs: string, owners: number[] = []) => {
  const parsed = parseListQuery(new URLSearchParams(qs), ORDER_LIST);
  if (!parsed.ok) throw new Error(`${qs}: ${JSON.stringify(parsed.errors)}`);
  const sql = orderListSql(parsed.value, owners);
  const n = sql.params.length;
  shapes.push([label, 'ListOrders', { where: sql.where, orderBy: sql.orderBy, limit: `$${n + 1}`, offset: `$${n + 2}::bigint` }, [...sql.params, parsed.value.pageSize, String((parsed.value.page - 1) * parsed.value.pageSize)]]);
};
orderShape('GET /orders (admin, default order)', '');
orderShape('GET /orders?status=pending&sort=-createdAt&pageSize=20 (scenario 2)', 'status=pending&sort=-createdAt&pageSize=20');
orderShape(`GET /orders?customerId=${busy}&minTotal=100&sort=-total,id&page=3 (scenario 5)`, `customerId=${busy}&minTotal=100&sort=-total,id&page=3`);
orderShape(`GET /orders as customer ${busy} (own orders, default order)`, '', [busy]);
orderShape(`GET /users/${busy}/orders?sort=-createdAt`, 'sort=-createdAt', [busy]);
orderShape('GET /orders?minTotal=500&sort=-total', 'minTotal=500&sort=-total');
orderShape('GET /orders?sort=-updatedAt', 'sort=-updatedAt');
orderShape('GET /orders?status=shipped&sort=status,-total', 'status=shipped&sort=status,-total');
orderShape('GET /orders?status=paid&page=200', 'status=paid&page=200');
const items = where([{ sql: (p) => `i.order_id = ${p}`, value: someOrder }]);
shapes.push([`GET /order-items?orderId=${someOrder}`, 'ListOrderItems', { where: items.sql, orderBy: orderBy([], { id: 'i.id' }), limit: '$2', offset: '$3::bigint' }, [...items.params, 20, '0']]);
const payments = where([{ sql: (p) => `p.order_id = ${p}`, value: someOrder }]);
shapes.push([`GET /payments?orderId=${someOrder}`, 'ListPayments', { where: payments.sql, orderBy: orderBy([], { id: 'p.id' }), limit: '$2', offset: '$3::bigint' }, [...payments.params, 20, '0']]);

console.log(`### ${orders.toLocaleString('en')} orders\n`);
for (const [label, statement, fragments, params] of shapes) {
  const text = compose(statement, fragments);
  // Warm the cache once, then measure.
  await db.sql.unsafe(text, params as never[]);
  const plan = (await db.sql.unsafe(`EXPLAIN (ANALYZE, COSTS OFF) ${text}`, params as never[])) as unknown as { 'QUERY PLAN': string }[];
  console.log(`#### ${label}\n\n\`\`\`\n${plan.map((row) => row['QUERY PLAN']).join('\n')}\n\`\`\`\n`);
}
await db.close();
