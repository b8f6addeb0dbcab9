/**
 * The plans of the list queries (issue 7, issue 12), composed by the same
 * code the handlers use, on the database of DATABASE_URL. Prints Markdown:
 * `node --import tsx bench/explain.ts > plans.md`.
 *
 * 1. `EXPLAIN (ANALYZE, BUFFERS)` of each scenario's list and the other
 *    telling shapes: the buffers a request touches.
 * 2. A check that no plan reads a table sequentially, for every documented
 *    order filter set (none, status, customerId, minTotal and their
 *    combinations, as an admin and within a customer's own orders) with the
 *    default sort, every sort key in both directions and some two-key sorts,
 *    planned for the values, as the service's statements are (a prepared
 *    statement switches to its generic plan only when that is estimated no
 *    dearer). Exits 1 when any plan has a Seq Scan (contract §14: none at
 *    1,000,000 orders).
 *
 * `--counting` plans every order list with ListOrders (the total counted
 * from the orders, as before migration 0007), for before/after figures.
 */
import { openDatabase, type Param } from '../src/db/database.ts';
import { parseListQuery } from '../src/http/list-query.ts';
import { orderBy, where } from '../src/db/page.ts';
import { ORDER_LIST, orderListSql } from '../src/orders/orders.ts';
import { STATUSES } from '../src/orders/schema.ts';

const counting = process.argv.includes('--counting');
const db = await openDatabase({
  databaseUrl: process.env.DATABASE_URL,
  dataDir: './data-bench',
  poolMax: 1,
  stalledConnectionMs: 0,
});
const [{ n: orders }] = (await db.sql`SELECT count(*)::int AS n FROM orders`) as unknown as [{ n: number }];
const [{ id: busy }] =
  (await db.sql`SELECT customer_id AS id FROM orders GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`) as unknown as [
    { id: number },
  ];
const [{ id: someOrder }] = (await db.sql`SELECT max(id) / 2 AS id FROM orders`) as unknown as [{ id: number }];

function compose(statement: string, fragments: Record<string, string>): string {
  return db.statement(statement).text.replace(/\{\{([a-zA-Z]+)\}\}/g, (_, key: string) => {
    const fragment = fragments[key];
    if (fragment === undefined) throw new Error(`${statement} needs {{${key}}}`);
    return fragment;
  });
}

interface Shape {
  label: string;
  text: string;
  params: Param[];
}

/** An order list as the handlers run it (`owners`: the customer's own id, or the user of the path). */
function orderShape(label: string, qs: string, owners: number[] = []): Shape {
  const parsed = parseListQuery(new URLSearchParams(qs), ORDER_LIST);
  if (!parsed.ok) throw new Error(`${qs}: ${JSON.stringify(parsed.errors)}`);
  const sql = orderListSql(parsed.value, owners);
  const n = sql.params.length;
  const fragments = {
    where: sql.where,
    orderBy: sql.orderBy,
    limit: `$${n + 1}`,
    offset: `$${n + 2}::bigint`,
    ...(sql.totalWhere === undefined ? {} : { totalWhere: sql.totalWhere }),
  };
  const text = compose(counting ? 'ListOrders' : sql.list, fragments);
  return {
    label,
    text,
    params: [...sql.params, parsed.value.pageSize, String((parsed.value.page - 1) * parsed.value.pageSize)],
  };
}

const showcase: Shape[] = [
  orderShape('GET /orders (admin, default order)', ''),
  orderShape(
    'GET /orders?status=pending&sort=-createdAt&pageSize=20 (scenario 2)',
    'status=pending&sort=-createdAt&pageSize=20',
  ),
  orderShape(
    `GET /orders?customerId=${busy}&minTotal=100&sort=-total,id&page=3 (scenario 5)`,
    `customerId=${busy}&minTotal=100&sort=-total,id&page=3`,
  ),
  orderShape(`GET /orders?customerId=${busy}`, `customerId=${busy}`),
  orderShape(
    `GET /orders?customerId=${busy}&status=paid&sort=-updatedAt`,
    `customerId=${busy}&status=paid&sort=-updatedAt`,
  ),
  orderShape(`GET /orders as customer ${busy} (own orders, default order)`, '', [busy]),
  orderShape(`GET /orders?status=pending as customer ${busy}`, 'status=pending', [busy]),
  orderShape(`GET /users/${busy}/orders?sort=-createdAt`, 'sort=-createdAt', [busy]),
  orderShape('GET /orders?minTotal=500&sort=-total', 'minTotal=500&sort=-total'),
  orderShape('GET /orders?sort=-updatedAt', 'sort=-updatedAt'),
  orderShape('GET /orders?status=shipped&sort=status,-total', 'status=shipped&sort=status,-total'),
  orderShape('GET /orders?status=paid&page=200', 'status=paid&page=200'),
];
const items = where([{ sql: (p) => `i.order_id = ${p}`, value: someOrder }]);
showcase.push({
  label: `GET /order-items?orderId=${someOrder}`,
  text: compose('ListOrderItems', {
    where: items.sql,
    orderBy: orderBy([], { id: 'i.id' }),
    limit: '$2',
    offset: '$3::bigint',
  }),
  params: [...items.params, 20, '0'],
});
const payments = where([{ sql: (p) => `p.order_id = ${p}`, value: someOrder }]);
showcase.push({
  label: `GET /payments?orderId=${someOrder}`,
  text: compose('ListPayments', {
    where: payments.sql,
    orderBy: orderBy([], { id: 'p.id' }),
    limit: '$2',
    offset: '$3::bigint',
  }),
  params: [...payments.params, 20, '0'],
});

// Every documented filter set, as an admin and within a customer's own
// orders, with the default order, every sort key in both directions and a
// few two-key sorts (scenario 5's among them).
const FILTER_SETS = [
  [],
  ['status'],
  ['customerId'],
  ['minTotal'],
  ['status', 'customerId'],
  ['status', 'minTotal'],
  ['customerId', 'minTotal'],
  ['status', 'customerId', 'minTotal'],
];
const VALUES: Record<string, string> = { status: 'pending', customerId: String(busy), minTotal: '100' };
const SORTS = [
  '',
  ...ORDER_LIST.sortKeys.flatMap((key) => [key, `-${key}`]),
  '-total,id',
  'status,-total',
  'status,createdAt',
  '-status,-updatedAt',
];
const checked: Shape[] = [];
for (const filters of FILTER_SETS) {
  for (const owners of [[], [busy]]) {
    for (const sort of SORTS) {
      const search = new URLSearchParams(filters.map((f): [string, string] => [f, VALUES[f] as string]));
      if (sort !== '') search.set('sort', sort);
      const qs = search.toString();
      checked.push(
        orderShape(`${owners.length > 0 ? `customer ${busy}: ` : ''}?${decodeURIComponent(qs)}`, qs, owners),
      );
    }
  }
}
// The other statuses, whose counts differ (the bench makes them equal; a real table does not).
for (const status of STATUSES) checked.push(orderShape(`?status=${status}`, `status=${status}`));

const planOf = async (sql: string, params: readonly Param[]) =>
  ((await db.sql.unsafe(sql, params as never[])) as unknown as { 'QUERY PLAN': string }[])
    .map((row) => row['QUERY PLAN'])
    .join('\n');

console.log(`### ${orders.toLocaleString('en')} orders${counting ? ' (every total counted: ListOrders)' : ''}\n`);
for (const shape of showcase) {
  // Warm the cache once, then measure.
  await db.sql.unsafe(shape.text, shape.params as never[]);
  const plan = await planOf(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${shape.text}`, shape.params);
  console.log(`#### ${shape.label}\n\n\`\`\`\n${plan}\n\`\`\`\n`);
}

const sequential: string[] = [];
for (const shape of checked) {
  const scans = (await planOf(`EXPLAIN (COSTS OFF) ${shape.text}`, shape.params))
    .split('\n')
    .filter((line) => line.includes('Seq Scan'));
  if (scans.length > 0)
    sequential.push(`- ${shape.label}: ${scans.map((s) => s.trim().replace(/^->\s*/, '')).join('; ')}`);
}
console.log(`#### Sequential scans\n`);
console.log(
  `${checked.length} order lists (${FILTER_SETS.length} filter sets × admin and own orders × ${SORTS.length} ` +
    'sorts, and each status): ' +
    (sequential.length === 0
      ? 'no Seq Scan in any.\n'
      : `${sequential.length} plans with a Seq Scan:\n\n${sequential.join('\n')}\n`),
);
await db.close();
if (sequential.length > 0) process.exitCode = 1;
