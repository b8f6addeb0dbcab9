/**
 * The plans of the list queries (issue 7, issue 12, deep pages), composed by
 * the same code the handlers use, on the database of DATABASE_URL. Prints
 * Markdown: `node --import tsx bench/explain.ts > plans.md`.
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
 * 3. With `--cursors`, instead: cursor pages (contract §4 "Deep pages"). The
 *    plans of the order lists' cursor pages after the 10,000th row, a table
 *    of each one's time and buffers at the 10,000th row and at the deepest
 *    (the last row of the list: the 1,000,000th of the admin's list at
 *    1,000,000 orders), against the OFFSET of a page that deep, and the check
 *    of 2. for the cursor page of every shape (exits 1 on a Seq Scan).
 *
 * `--counting` plans every order list with ListOrders (the total counted
 * from the orders, as before migration 0007), for before/after figures.
 */
import { openDatabase, type Param } from '../src/db/database.ts';
import { where } from '../src/db/page.ts';
import { orderListSql } from '../src/orders/order-list.ts';
import { STATUSES } from '../src/orders/rules.ts';
import { everyList, FILTER_SETS, orderShapes, SORTS, type Shape } from './order-shapes.ts';

const counting = process.argv.includes('--counting');
const cursors = process.argv.includes('--cursors');
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
const { listShape, orderQuery, orderOf, orderShape, positionAt, counted } = orderShapes(db, counting);

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
const byId = { pageSize: 20, order: [{ key: 'id', descending: false, type: 'bigint' as const }], page: 1 };
const items = where([{ sql: (p) => `i.order_id = ${p}`, value: someOrder }]);
showcase.push(
  listShape(
    `GET /order-items?orderId=${someOrder}`,
    {
      list: 'ListOrderItems',
      count: 'CountOrderItems',
      where: items.sql,
      params: items.params,
      columns: { id: 'i.id' },
    },
    byId,
  ),
);
const payments = where([{ sql: (p) => `p.order_id = ${p}`, value: someOrder }]);
showcase.push(
  listShape(
    `GET /payments?orderId=${someOrder}`,
    {
      list: 'ListPayments',
      count: 'CountPayments',
      where: payments.sql,
      params: payments.params,
      columns: { id: 'p.id', createdAt: 'p.created_at' },
    },
    byId,
  ),
);

const checked: Shape[] = [];
for (const { qs, owners, label } of everyList(busy)) checked.push(orderShape(label, qs, owners));
// The other statuses, whose counts differ (the bench makes them equal; a real table does not).
for (const status of STATUSES) checked.push(orderShape(`?status=${status}`, `status=${status}`));

interface Measure {
  /** The statement's execution time (ms), the median of 3 warm runs. */
  ms: number;
  /** Shared buffers (hit + read) of the whole statement. */
  buffers: number;
  /** The page alone (its Limit node): time (ms) and shared buffers. */
  pageMs: number;
  pageBuffers: number;
}

interface PlanNode {
  'Node Type': string;
  'Actual Total Time': number;
  'Actual Loops': number;
  'Shared Hit Blocks': number;
  'Shared Read Blocks': number;
  Plans?: PlanNode[];
}

function findNode(node: PlanNode, type: string): PlanNode | undefined {
  if (node['Node Type'] === type) return node;
  for (const child of node.Plans ?? []) {
    const found = findNode(child, type);
    if (found !== undefined) return found;
  }
  return undefined;
}

async function measure(shape: Shape): Promise<Measure> {
  const runs: Measure[] = [];
  for (let i = 0; i < 4; i++) {
    const [row] = (await db.sql.unsafe(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${shape.text}`,
      shape.params as never[],
    )) as unknown as { 'QUERY PLAN': [{ Plan: PlanNode; 'Execution Time': number }] }[];
    const [{ Plan: plan, 'Execution Time': ms }] = row!['QUERY PLAN'];
    const limit = findNode(plan, 'Limit') ?? plan;
    const blocks = (n: PlanNode) => n['Shared Hit Blocks'] + n['Shared Read Blocks'];
    // The first run warms the cache.
    if (i > 0) runs.push({ ms, buffers: blocks(plan), pageMs: limit['Actual Total Time'], pageBuffers: blocks(limit) });
  }
  runs.sort((a, b) => a.ms - b.ms);
  return runs[1]!;
}

const planOf = async (sql: string, params: readonly Param[]) =>
  ((await db.sql.unsafe(sql, params as never[])) as unknown as { 'QUERY PLAN': string }[])
    .map((row) => row['QUERY PLAN'])
    .join('\n');

const sequential: string[] = [];
async function checkSequential(shape: Shape): Promise<void> {
  const scans = (await planOf(`EXPLAIN (COSTS OFF) ${shape.text}`, shape.params))
    .split('\n')
    .filter((line) => line.includes('Seq Scan'));
  if (scans.length > 0)
    sequential.push(`- ${shape.label}: ${scans.map((s) => s.trim().replace(/^->\s*/, '')).join('; ')}`);
}

if (!cursors) {
  console.log(`### ${orders.toLocaleString('en')} orders${counting ? ' (every total counted: ListOrders)' : ''}\n`);
  for (const shape of showcase) {
    // Warm the cache once, then measure.
    await db.sql.unsafe(shape.text, shape.params as never[]);
    const plan = await planOf(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${shape.text}`, shape.params);
    console.log(`#### ${shape.label}\n\n\`\`\`\n${plan}\n\`\`\`\n`);
  }
  for (const shape of checked) await checkSequential(shape);
  console.log(`#### Sequential scans\n`);
  console.log(
    `${checked.length} order lists (${FILTER_SETS.length} filter sets × admin and own orders × ${SORTS.length} ` +
      'sorts, and each status): ' +
      (sequential.length === 0
        ? 'no Seq Scan in any.\n'
        : `${sequential.length} plans with a Seq Scan:\n\n${sequential.join('\n')}\n`),
  );
} else {
  // Cursor pages (contract §4 "Deep pages"): the page after a keyset position, never an OFFSET.
  const lists: [string, string, number[]][] = [
    ['GET /orders (admin, default order)', '', []],
    ['GET /orders?status=pending&sort=-createdAt (scenario 2)', 'status=pending&sort=-createdAt', []],
    ['GET /orders?sort=-total,id (mixed directions)', 'sort=-total,id', []],
    ['GET /orders?sort=status', 'sort=status', []],
    ['GET /orders?status=shipped&sort=status,-total (status pinned)', 'status=shipped&sort=status,-total', []],
    ['GET /orders?sort=-updatedAt', 'sort=-updatedAt', []],
    ['GET /orders?minTotal=100&sort=-total', 'minTotal=100&sort=-total', []],
    [`GET /orders as customer ${busy} (own orders, default order)`, '', [busy]],
    [`GET /users/${busy}/orders?sort=-createdAt`, 'sort=-createdAt', [busy]],
    [`GET /orders?sort=-updatedAt as customer ${busy}`, 'sort=-updatedAt', [busy]],
    [`GET /orders?sort=status as customer ${busy}`, 'sort=status', [busy]],
    [`GET /orders?customerId=${busy}&sort=-total,id (mixed directions)`, `customerId=${busy}&sort=-total,id`, []],
  ];
  console.log(`### Cursor pages at ${orders.toLocaleString('en')} orders\n`);
  const table: string[] = [];
  for (const [label, qs, owners] of lists) {
    const n = await counted(qs, owners);
    // The page of 20 that ends at the 10,000th row, and the one that ends at the last.
    const depths = [...new Set([Math.min(10_000, n), n])];
    for (const [d, depth] of depths.entries()) {
      // A list of 20 rows or fewer has no second page: then the rows after its first.
      const start = Math.max(1, depth - 20);
      const after = await positionAt(qs, owners, start);
      if (after === undefined) throw new Error(`${label}: no row ${start}`);
      const shape = orderShape(`${label}, cursor after row ${start}`, qs, owners, after);
      if (!shape.text.includes('OFFSET 0\n')) throw new Error(`${label}: the cursor page has an OFFSET`);
      if (d === 0) {
        await db.sql.unsafe(shape.text, shape.params as never[]);
        const plan = await planOf(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${shape.text}`, shape.params);
        console.log(
          `#### ${label}: rows ${start + 1}–${Math.min(start + 20, n)} by cursor\n\n\`\`\`\n${plan}\n\`\`\`\n`,
        );
      }
      const cursor = await measure(shape);
      const query = orderQuery(qs);
      // The same page by OFFSET, when the list's end falls on a page's (a page number is an integer).
      const old = Number.isInteger(depth / 20)
        ? await measure(
            listShape('', orderListSql(query, owners), { pageSize: 20, order: orderOf(query), page: depth / 20 }),
          )
        : undefined;
      const cell = (m: Measure | undefined) =>
        m === undefined ? '—' : `${m.pageMs.toFixed(2)} ms, ${m.pageBuffers.toLocaleString('en')} buffers`;
      table.push(
        `| ${label} | ${n.toLocaleString('en')} | ${depth.toLocaleString('en')} | ${cell(cursor)} | ` +
          `${cursor.ms.toFixed(2)} ms | ${cell(old)} |`,
      );
    }
  }
  console.log('#### Time to a row, by cursor and by OFFSET\n');
  console.log(
    '| List | rows | page ending at row | cursor page (its Limit node) | cursor statement (with the total) | ' +
      'the same page by OFFSET (its Limit node) |',
  );
  console.log('| --- | --- | --- | --- | --- | --- |');
  for (const line of table) console.log(line);
  console.log('');
  // The check of every shape, now on its cursor page.
  let empty = 0;
  let shapes = 0;
  const countedSequentially: string[] = [];
  for (const { qs, sort, owners, label } of everyList(busy)) {
    const n = await counted(qs, owners);
    // An empty list (the bench gives each customer one status and one total) is planned after a position of
    // every order in the same sort: the plan is what is checked.
    const after =
      n === 0
        ? await positionAt(sort === '' ? '' : `sort=${sort}`, [], 10_000)
        : await positionAt(qs, owners, Math.min(10_000, Math.ceil(n / 2)));
    if (after === undefined) throw new Error(`${qs}: no position`);
    if (n === 0) empty += 1;
    shapes += 1;
    const shape = orderShape(`${label} by cursor`, qs, owners, after);
    const [row] = (await db.sql.unsafe(
      `EXPLAIN (COSTS OFF, FORMAT JSON) ${shape.text}`,
      shape.params as never[],
    )) as unknown as { 'QUERY PLAN': [{ Plan: PlanNode }] }[];
    const plan = row!['QUERY PLAN'][0].Plan;
    // The page is the Limit's subtree; the rest is the total (and the items of the page's orders).
    const page = findNode(plan, 'Limit') ?? plan;
    if (findNode(page, 'Seq Scan') !== undefined) sequential.push(`- ${shape.label}: the page`);
    else if (findNode(plan, 'Seq Scan') !== undefined) countedSequentially.push(shape.label);
  }
  console.log(`#### Sequential scans on cursor pages\n`);
  console.log(
    `${shapes} cursor pages (${FILTER_SETS.length} filter sets × admin and own orders × ${SORTS.length} sorts), ` +
      `each after the row at depth min(10,000, half the list), or for the ${empty} empty lists after the 10,000th ` +
      'order in the same sort; each OFFSET 0: ' +
      (sequential.length === 0
        ? 'no page reads a table sequentially.'
        : `${sequential.length} pages with a Seq Scan:\n\n${sequential.join('\n')}\n`),
  );
  if (countedSequentially.length > 0)
    console.log(
      `The exact total (meta.total) of ${countedSequentially.length} of them is counted by a sequential scan, ` +
        `as on their pages by number: ${countedSequentially.join(', ')}.\n`,
    );
}
await db.close();
if (sequential.length > 0) process.exitCode = 1;
