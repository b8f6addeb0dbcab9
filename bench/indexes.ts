/**
 * What each index and trigger of `orders` serves and what it costs (issue 35,
 * item 3), on the database of DATABASE_URL (a copy of the bench's, seeded
 * with BENCH_ORDERS=1000000 BENCH_SEED_ONLY=1; it drops and restores indexes
 * in transactions it rolls back, so run it on a database nothing else uses).
 * Prints Markdown: `node --import tsx bench/indexes.ts > indexes.md`.
 *
 * - Reads: every order list of bench/order-shapes.ts (each filter set, as an
 *   admin and within a customer's own orders, each sort), its first page and
 *   its cursor page after the row at depth min(10,000, half the list), each
 *   statement with its exact total. For each secondary index, in a
 *   transaction that drops it, the lists whose plan changes are measured
 *   (EXPLAIN ANALYZE, the median of 3 warm runs, each at most 5 s) against
 *   their plan with every index.
 * - Writes: 20,000 new orders in one INSERT (rolled back, then VACUUM),
 *   triggers and foreign keys off (`session_replication_role = replica`):
 *   each index's buffers per order, counted in the transaction
 *   (`pg_stat_get_xact_blocks_fetched`), and the time of all of them (every
 *   index against the primary key alone, the median of 5 alternations)
 *   shared out by those buffers: the time of one index alone is within the
 *   noise of the heap's.
 * - Triggers: 2,000 single-row statements in one transaction (the statement
 *   that fires the trigger, as a POST or a PATCH runs it) with the trigger
 *   and with it disabled: its cost per statement.
 *
 * An index is dropped only if no list is slower or reads more than 1.25
 * times as many buffers without it ("served as well"); the verdict names the
 * list that needs it most.
 */
import type { ReservedSql } from 'postgres';
import { openDatabase } from '../src/db/database.ts';
import { everyList, FILTER_SETS, orderShapes, SORTS, type Shape } from './order-shapes.ts';

const db = await openDatabase({
  databaseUrl: process.env.DATABASE_URL,
  dataDir: './data-bench',
  poolMax: 1,
  stalledConnectionMs: 0,
});
const { orderShape, positionAt, counted } = orderShapes(db);
const [{ n: orders }] = (await db.sql`SELECT count(*)::int AS n FROM orders`) as unknown as [{ n: number }];
const [{ id: busy }] =
  (await db.sql`SELECT customer_id AS id FROM orders GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`) as unknown as [
    { id: number },
  ];

/** Within `slack` of the list's cost with every index: served as well. */
const SLACK = 1.25;
/** A list past this (ms) is cut off and counted at it. */
const TIMEOUT_MS = 5_000;

// The lists: first pages and cursor pages, their positions taken with every index.
const shapes: Shape[] = [];
for (const { qs, owners, label } of everyList(busy)) {
  shapes.push(orderShape(label, qs, owners));
  const n = await counted(qs, owners);
  if (n < 2) continue;
  const after = await positionAt(qs, owners, Math.min(10_000, Math.ceil(n / 2)));
  if (after !== undefined) shapes.push(orderShape(`${label} by cursor`, qs, owners, after));
}

interface Cost {
  ms: number;
  buffers: number;
}

interface PlanNode {
  'Shared Hit Blocks': number;
  'Shared Read Blocks': number;
}

const connection: ReservedSql = await db.sql.reserve();
const run = (text: string, params: readonly unknown[] = []) => connection.unsafe(text, params as never[]);

const planText = async (shape: Shape) =>
  ((await run(`EXPLAIN (COSTS OFF) ${shape.text}`, shape.params)) as unknown as { 'QUERY PLAN': string }[])
    .map((row) => row['QUERY PLAN'])
    .join('\n');

async function cost(shape: Shape): Promise<Cost> {
  const runs: Cost[] = [];
  for (let i = 0; i < 4; i++) {
    try {
      await run('SAVEPOINT measure');
      const [row] = (await run(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${shape.text}`, shape.params)) as unknown as {
        'QUERY PLAN': [{ Plan: PlanNode; 'Execution Time': number }];
      }[];
      await run('RELEASE SAVEPOINT measure');
      const [{ Plan: plan, 'Execution Time': ms }] = row!['QUERY PLAN'];
      // The first run warms the cache.
      if (i > 0) runs.push({ ms, buffers: plan['Shared Hit Blocks'] + plan['Shared Read Blocks'] });
    } catch (error) {
      if ((error as { code?: string }).code !== '57014') throw error;
      await run('ROLLBACK TO SAVEPOINT measure');
      return { ms: TIMEOUT_MS, buffers: Number.NaN };
    }
  }
  runs.sort((a, b) => a.ms - b.ms);
  return runs[1] as Cost;
}

const secondary = (
  (await run(
    `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'orders' AND indexname <> 'orders_pkey' ORDER BY 1`,
  )) as unknown as { indexname: string; indexdef: string }[]
).map((row) => ({ name: row.indexname, columns: /\((.*)\)$/.exec(row.indexdef)?.[1] ?? '' }));

// Every list's plan and cost with every index.
await run('BEGIN');
await run(`SET LOCAL statement_timeout = ${TIMEOUT_MS}`);
const baseline = new Map<Shape, { plan: string; cost: Cost }>();
for (const shape of shapes) baseline.set(shape, { plan: await planText(shape), cost: await cost(shape) });
await run('ROLLBACK');

interface ReadVerdict {
  changed: number;
  worst?: { label: string; before: Cost; after: Cost; ratio: number };
}

async function reads(index: string): Promise<ReadVerdict> {
  await run('BEGIN');
  await run(`SET LOCAL statement_timeout = ${TIMEOUT_MS}`);
  await run(`DROP INDEX ${index}`);
  let changed = 0;
  let worst: ReadVerdict['worst'];
  for (const shape of shapes) {
    const before = baseline.get(shape) as { plan: string; cost: Cost };
    if ((await planText(shape)) === before.plan) continue;
    changed += 1;
    const after = await cost(shape);
    const ratio = Math.max(after.ms / before.cost.ms, after.buffers / before.cost.buffers || Infinity);
    if (worst === undefined || ratio > worst.ratio) worst = { label: shape.label, before: before.cost, after, ratio };
  }
  await run('ROLLBACK');
  return { changed, ...(worst === undefined ? {} : { worst }) };
}

/** One order's share of a 20,000-row INSERT: time (ms) and, per index, the buffers it touched. */
interface WriteCost {
  ms: number;
  buffers: Map<string, number>;
}

const INSERT_ORDERS =
  `INSERT INTO orders (customer_id, status, currency, total, created_at, updated_at) ` +
  `SELECT 2 + (g * 7919) % 1000, 'pending', 'EUR', (g % 500) + 0.99, now() + g * interval '1 ms', ` +
  `now() + g * interval '1 ms' FROM generate_series(1, 20000) g`;

/** Each index's buffers read or hit so far in this transaction. */
const indexBuffers = async () =>
  new Map(
    (
      (await run(
        `SELECT indexrelid::regclass::text AS name, pg_stat_get_xact_blocks_fetched(indexrelid)::int AS n
         FROM pg_index WHERE indrelid = 'orders'::regclass`,
      )) as unknown as { name: string; n: number }[]
    ).map((row) => [row.name, row.n]),
  );

/** 20,000 new orders (rolled back, then VACUUM), with every index or with the secondary ones dropped. */
async function insertCost(dropAll: boolean): Promise<WriteCost> {
  await run('BEGIN');
  await run('SET LOCAL session_replication_role = replica');
  if (dropAll) for (const { name } of secondary) await run(`DROP INDEX ${name}`);
  const before = await indexBuffers();
  const started = performance.now();
  await run(INSERT_ORDERS);
  const ms = performance.now() - started;
  const after = await indexBuffers();
  await run('ROLLBACK');
  await run('VACUUM orders');
  const buffers = new Map([...after].map(([name, n]) => [name, (n - (before.get(name) ?? 0)) / 20_000]));
  return { ms: ms / 20_000, buffers };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

/**
 * What the secondary indexes cost an insert: each one's buffers per order (counted), and their time together
 * (every index against the primary key alone, the median of 5 alternations) shared out by those buffers.
 */
async function writes(): Promise<{ all: number; perIndex: Map<string, { us: number; buffers: number }> }> {
  const shares: number[] = [];
  let counted: Map<string, number> = new Map();
  for (let i = 0; i < 5; i++) {
    const every = await insertCost(false);
    const bare = await insertCost(true);
    shares.push(every.ms - bare.ms);
    counted = every.buffers;
  }
  const all = median(shares);
  const total = secondary.reduce((sum, { name }) => sum + (counted.get(name) ?? 0), 0);
  const perIndex = new Map(
    secondary.map(({ name }) => {
      const buffers = counted.get(name) ?? 0;
      return [name, { us: (all * 1000 * buffers) / total, buffers }];
    }),
  );
  return { all, perIndex };
}

/** A trigger's cost per statement: 2,000 of `statement` (on order `id`) with it, and with it disabled. */
async function triggerCost(trigger: string, statement: string): Promise<number> {
  const loop = `DO $$ BEGIN FOR i IN 1..2000 LOOP ${statement}; END LOOP; END $$`;
  const timed = async (disabled: boolean) => {
    await run('BEGIN');
    if (disabled) await run(`ALTER TABLE orders DISABLE TRIGGER ${trigger}`);
    const started = performance.now();
    await run(loop);
    const ms = performance.now() - started;
    await run('ROLLBACK');
    await run('VACUUM orders');
    return ms;
  };
  const shares: number[] = [];
  for (let i = 0; i < 3; i++) shares.push(((await timed(false)) - (await timed(true))) / 2_000);
  return median(shares);
}

const [{ id: someOrder }] = (await run('SELECT max(id) / 2 AS id FROM orders')) as unknown as [{ id: number }];
const INSERT_ONE = `INSERT INTO orders (customer_id, currency, total) VALUES (${busy}, 'EUR', 0)`;
/** Each run of the loop flips the order's status, so that the counts move. */
const FLIP = "CASE WHEN i % 2 = 0 THEN 'paid' ELSE 'pending' END";
const UPDATE_STATUS = `UPDATE orders SET status = ${FLIP} WHERE id = ${someOrder}`;
const UPDATE_TOTAL = `UPDATE orders SET total = total + 1 WHERE id = ${someOrder}`;

const fmt = (c: Cost) => `${c.ms >= TIMEOUT_MS ? `> ${TIMEOUT_MS}` : c.ms.toFixed(2)} ms, ${c.buffers} buffers`;
console.log(`### ${orders.toLocaleString('en')} orders: what each index serves and costs\n`);
console.log(
  `${shapes.length} order lists (${FILTER_SETS.length} filter sets × admin and own orders × ${SORTS.length} sorts, ` +
    'first pages and cursor pages, each with its exact total). Write cost: per order of a 20,000-row INSERT, ' +
    'triggers and foreign keys off.\n',
);
console.log(
  '| index | write per order: time, buffers | lists whose plan changes without it | ' +
    'the one that needs it most: with it, without it | verdict |',
);
console.log('| --- | --- | --- | --- | --- |');
const written = await writes();
for (const { name, columns } of secondary) {
  const write = written.perIndex.get(name) as { us: number; buffers: number };
  const read = await reads(name);
  const served = read.worst === undefined || read.worst.ratio <= SLACK;
  const needs =
    read.worst === undefined
      ? 'none'
      : `\`${read.worst.label}\`: ${fmt(read.worst.before)}; ${fmt(read.worst.after)} ` +
        `(${read.worst.ratio.toFixed(1)} ×)`;
  console.log(
    `| \`${name}\` (${columns}) | ${write.us.toFixed(1)} µs, ${write.buffers.toFixed(2)} | ` +
      `${read.changed} | ${needs} | ${served ? 'drop: served as well' : 'keep'} |`,
  );
}
console.log(
  `\nThe ${secondary.length} secondary indexes together: ${(written.all * 1000).toFixed(1)} µs per order inserted ` +
    `(every index against the primary key alone), shared out above by each one's buffers.\n`,
);
console.log('| trigger | fires on | cost per statement |');
console.log('| --- | --- | --- |');
for (const [trigger, on, statement] of [
  ['order_counts_keep_insert', 'INSERT (every POST)', INSERT_ONE],
  ['order_counts_keep_update', 'UPDATE of customer or status', UPDATE_STATUS],
  ['orders_set_updated_at', 'UPDATE', UPDATE_TOTAL],
  ['orders_track_revision', 'UPDATE', UPDATE_TOTAL],
] as const) {
  console.log(`| \`${trigger}\` | ${on} | ${((await triggerCost(trigger, statement)) * 1000).toFixed(1)} µs |`);
}
await connection.release();
await db.close();
