/**
 * The benchmark's data (contract §14): creates the database DATABASE_URL
 * names when missing, migrates it, seeds the demo catalog and
 * `bench/seed.sql`'s customers and orders (only the missing ones), and
 * returns the tokens and ids the scenarios need.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createToken } from '../src/auth/token-store.ts';
import { tokenHash, type Scope } from '../src/auth/tokens.ts';
import { openDatabase, type Database } from '../src/db/database.ts';
import { migrate } from '../src/db/migrate.ts';
import { seed } from '../src/service/seed.ts';
import { parseStatements } from '../src/db/statements.ts';

const ROOT = new URL('..', import.meta.url).pathname;

const statements = new Map(
  parseStatements(readFileSync(`${ROOT}bench/seed.sql`, 'utf8'), 'bench/seed.sql').map((s) => [s.name, s.text]),
);
const run = (db: Database, name: string, params: (string | number)[] = []) =>
  db.sql.unsafe(statements.get(name) as string, params);
/**
 * Seeding statements run for minutes at 1,000,000 orders: without the
 * service's 5 s statement timeout, in one transaction. Returns the last one's rows.
 */
const runLong = (db: Database, names: string[], params: (string | number)[] = []) =>
  db.sql.begin(async (tx) => {
    await tx.unsafe('SET LOCAL statement_timeout = 0');
    let rows: unknown[] = [];
    for (const name of names)
      rows = await tx.unsafe(statements.get(name) as string, name === 'SeedBenchOrders' ? params : []);
    return rows;
  });

/** VACUUM (ANALYZE) of the bench tables: outside a transaction, without the statement timeout. */
async function vacuum(db: Database): Promise<void> {
  const connection = await db.sql.reserve();
  try {
    await connection.unsafe('SET statement_timeout = 0');
    await connection.unsafe(statements.get('VacuumBench') as string);
  } finally {
    connection.release();
  }
}

export interface Prepared {
  /** An admin's token (scenarios 1, 2, 3, 5). */
  token: string;
  /** A customer's token (scenario 4). */
  customerToken: string;
  customerId: number;
  /** 2,000 random order ids (scenario 1 and the peers' GET). */
  orderIds: number[];
  /** The customer with the most orders of total ≥ 100 (scenario 5). */
  busiest: number;
}

/** Scenario 4's order (and the peers' POST): two items of the seeded catalog. */
export const ORDER_BODY = JSON.stringify({
  items: [
    { productId: 1, qty: 2 },
    { productId: 3, qty: 1 },
  ],
});
export const JSON_TYPE = { 'content-type': 'application/json' };

/** The customer's headers for scenario 4. */
export const customerHeaders = (prepared: Prepared) => ({
  authorization: `Bearer ${prepared.customerToken}`,
  ...JSON_TYPE,
});

/** The list of scenario 2: a page of pending orders, newest first. */
export const LIST = '/orders?status=pending&sort=-createdAt&pageSize=20';

/**
 * The service's loads of scenarios 1 (random GETs), 2 (the list), 3 (the 304
 * of `etag`, the first order's tag) and 4 (keyed POSTs), as bench/load.mjs
 * takes them: `make bench` and `make bench-ab` drive the same requests.
 */
export function serviceLoads(prepared: Prepared, etag: string): Record<'1' | '2' | '3' | '4', Record<string, unknown>> {
  const auth = { authorization: `Bearer ${prepared.token}` };
  const ids = prepared.orderIds;
  return {
    '1': { method: 'GET', paths: ids.map((id) => `/v1/orders/${id}`), headers: auth },
    '2': { method: 'GET', paths: [`/v1${LIST}`], headers: auth },
    '3': { method: 'GET', paths: [`/v1/orders/${ids[0]}`], headers: { ...auth, 'if-none-match': etag } },
    '4': {
      method: 'POST',
      paths: ['/v1/orders'],
      freshIdempotencyKey: true,
      headers: customerHeaders(prepared),
      body: ORDER_BODY,
    },
  };
}

/** Creates the database `url` names when the server does not have it yet. */
async function ensureDatabase(url: string, dataDir: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) return;
  target.pathname = '/postgres';
  const admin = await openDatabase({ databaseUrl: target.toString(), dataDir, poolMax: 1, stalledConnectionMs: 0 });
  try {
    const exists = await admin.sql`SELECT 1 FROM pg_database WHERE datname = ${name}`;
    if (exists.length === 0) {
      process.stderr.write(`bench: creating the database ${name}\n`);
      await admin.sql.unsafe(`CREATE DATABASE ${name}`);
    }
  } finally {
    await admin.close();
  }
}

/** Seeds `orders` orders on `databaseUrl` (the embedded database in `dataDir` when undefined). */
export async function prepare(databaseUrl: string | undefined, dataDir: string, orders: number): Promise<Prepared> {
  if (databaseUrl === undefined)
    process.stderr.write(
      `bench: DATABASE_URL is unset: using the embedded database in ${dataDir} (figures are not comparable to a ` +
        'real server)\n',
    );
  else await ensureDatabase(databaseUrl, dataDir);
  // Seeding lifts the statement timeout: no watchdog on these connections.
  const db = await openDatabase({ databaseUrl, dataDir, poolMax: 4, stalledConnectionMs: 0 });
  try {
    await migrate(db);
    await seed(db);
    await run(db, 'SeedBenchUsers');
    const [{ n: posted }] = (await runLong(db, ['DeleteBenchPosts'])) as unknown as [{ n: number }];
    if (posted > 0) process.stderr.write(`bench: removed ${posted} orders earlier runs posted\n`);
    await run(db, 'DropPeerTables');
    const [{ n }] = (await run(db, 'CountBenchOrders')) as unknown as [{ n: number }];
    if (n < orders) {
      process.stderr.write(`bench: seeding ${orders - n} orders (have ${n})…\n`);
      const started = performance.now();
      for (let left = orders - n; left > 0; left -= 100_000)
        await runLong(db, ['SeedBenchOrders'], [Math.min(left, 100_000)]);
      await runLong(db, ['PauseUpdatedAtTrigger', 'SetBenchTotals', 'ResumeUpdatedAtTrigger']);
      await vacuum(db);
      process.stderr.write(`bench: seeded in ${Math.round((performance.now() - started) / 1000)} s\n`);
    } else if (posted > 0) await vacuum(db);
    const admin = await db.opt('FindUserByEmail', ['bench-admin@example.com']);
    const customer = await db.opt('FindUserByEmail', ['bench-customer-1@example.com']);
    // bench-ab may compare a build from before tagged tokens (migration 0016), which takes only untagged ones.
    const make = process.env.BENCH_UNTAGGED_TOKENS === '1' ? untaggedToken : createToken;
    const token = (await make(db, admin!.id, ['orders:read', 'orders:write'], 3600)).token;
    const customerToken = (await make(db, customer!.id, ['orders:read', 'orders:write'], 3600)).token;
    const orderIds = ((await run(db, 'SampleOrderIds')) as unknown as { id: number }[]).map((r) => r.id);
    const [busiest] = (await run(db, 'BusiestCustomer')) as unknown as [{ id: number }];
    return { token, customerToken, customerId: customer!.id, orderIds, busiest: busiest!.id };
  } finally {
    await db.close();
  }
}

/** A token of the shape made before tags (`ord_` and 32 random bytes), stored as the service stores any. */
async function untaggedToken(db: Database, userId: number, scopes: readonly Scope[], ttlSeconds: number) {
  const token = `ord_${randomBytes(32).toString('base64url')}`;
  await db.one('InsertToken', [userId, tokenHash(token), scopes, ttlSeconds]);
  return { token };
}
