/**
 * The webhook delivery counts of GET /metrics (contract §13: never a scan that
 * grows with a table), kept by the triggers of migration 0011 in the
 * transaction of every change: inserted with an event (one statement, one
 * endpoint, many, or none), moved by an attempt's outcome, removed by an endpoint's or an
 * event's deletion (cascades) and by TRUNCATE. After each, the kept counts
 * equal a count of the rows; and MetricsFigures reads no delivery row.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDatabase, type Database } from '../../src/db/database.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createTestDatabase, TEST_PREPARE, type TestDatabase } from '../support/database.ts';

let database: TestDatabase;
let db: Database;

before(async () => {
  database = await createTestDatabase();
  db = await openDatabase({ databaseUrl: database.url, dataDir: '', poolMax: 2, prepare: TEST_PREPARE });
  await migrate(db);
});
after(async () => {
  await db?.close();
  await database?.drop();
});

type Counts = Record<string, number>;

/** The deliveries by status, counted row by row: what the kept counts must say. */
async function counted(): Promise<Counts> {
  const rows = await db.sql<{ status: string; n: number }[]>`
    SELECT status, count(*)::int AS n FROM webhook_deliveries GROUP BY status`;
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/** The kept counts, without the statuses that net to zero. */
async function kept(): Promise<Counts> {
  const rows = await db.sql<{ status: string; n: number }[]>`
    SELECT status, sum(n)::int AS n FROM derived.webhook_delivery_counts GROUP BY status HAVING sum(n) <> 0`;
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

async function figures(): Promise<{ pending: number; failed: number }> {
  const row = await db.one('MetricsFigures');
  return { pending: row.deliveries_pending, failed: row.deliveries_failed };
}

async function endpoint(events: string[]): Promise<number> {
  return (await db.one('InsertWebhookEndpoint', ['https://hooks.example/x', events, 'whsec_x'])).id;
}

async function event(type: string): Promise<number> {
  return db.begin(async (tx) => (await tx.one('InsertEvent', [type, null, '{}'])).id);
}

describe('derived.webhook_delivery_counts (migration 0011)', () => {
  it('follows every change of the deliveries, and MetricsFigures reads them', async () => {
    const a = await endpoint(['order.created', 'order.updated']);
    const b = await endpoint(['order.created']);
    await endpoint(['user.created']);
    // One statement inserts a delivery per subscribed endpoint.
    for (let i = 0; i < 5; i++) await event('order.created');
    const updated = await event('order.updated');
    assert.deepEqual(await counted(), { pending: 11 });
    assert.deepEqual(await kept(), await counted());
    assert.deepEqual(await figures(), { pending: 11, failed: 0 });

    // An event no endpoint is subscribed to inserts no delivery, and its statement writes no counter row.
    const versions = async () =>
      (
        await db.sql<{ v: string }[]>`SELECT string_agg(ctid::text || xmin::text, ',' ORDER BY ctid) AS v
        FROM derived.webhook_delivery_counts`
      )[0]!.v;
    const before = await versions();
    await event('payment.succeeded');
    assert.equal(await versions(), before);
    assert.deepEqual(await kept(), { pending: 11 });

    // Outcomes: delivered and failed; an update that keeps the status moves nothing.
    await db.sql`UPDATE webhook_deliveries SET status = 'delivered' WHERE endpoint_id = ${b}`;
    await db.sql`UPDATE webhook_deliveries SET status = 'failed' WHERE event_id = ${updated}`;
    await db.sql`UPDATE webhook_deliveries SET attempts = attempts + 1`;
    assert.deepEqual(await counted(), { pending: 5, delivered: 5, failed: 1 });
    assert.deepEqual(await kept(), await counted());
    assert.deepEqual(await figures(), { pending: 5, failed: 1 });

    // Cascades: an endpoint's deletion, an event's.
    await db.sql`DELETE FROM webhook_endpoints WHERE id = ${b}`;
    await db.sql`DELETE FROM events WHERE id = ${updated}`;
    assert.deepEqual(await counted(), { pending: 5 });
    assert.deepEqual(await kept(), await counted());
    assert.equal(a > 0, true);

    await db.sql`TRUNCATE webhook_deliveries CASCADE`;
    assert.deepEqual(await kept(), {});
    assert.deepEqual(await figures(), { pending: 0, failed: 0 });
  });

  it('reads no delivery row to count them (a plan without webhook_deliveries)', async () => {
    const text = db.statement('MetricsFigures').text;
    const [plan] = await db.sql.unsafe<{ 'QUERY PLAN': unknown }[]>(`EXPLAIN (FORMAT JSON) ${text}`);
    const relations = JSON.stringify(plan?.['QUERY PLAN']).match(/"Relation Name":"[^"]+"/g) ?? [];
    assert.deepEqual([...new Set(relations)].sort(), [
      '"Relation Name":"events"',
      '"Relation Name":"webhook_delivery_counts"',
    ]);
  });
});
