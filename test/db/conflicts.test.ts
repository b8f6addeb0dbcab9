/**
 * A transaction PostgreSQL rolls back to end a deadlock runs again (src/db/transaction.ts, retryingConflicts):
 * on the real server, two transactions lock two orders in opposite orders; the service's is the one the
 * deadlock detector ends (the other waits 60 s before it would look), and the service's `begin()` resolves
 * with the value of its second attempt, with both orders' locks taken, instead of failing its request (a 500
 * before). retryingConflicts()'s limits are tested in test/db/transaction.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDatabase, type Database } from '../../src/db/database.ts';
import { migrate } from '../../src/db/migrate.ts';
import {
  createTestDatabase,
  REAL_SERVER_URL,
  serviceTransaction,
  TEST_PREPARE,
  type TestDatabase,
} from '../support/database.ts';
import { until } from '../support/tools.ts';

const REAL =
  REAL_SERVER_URL === undefined ? 'needs a real PostgreSQL server: the embedded one has one connection' : false;

describe('a transaction ended by a deadlock', { skip: REAL }, () => {
  let database: TestDatabase;
  let db: Database;
  let x: number;
  let y: number;

  before(async () => {
    database = await createTestDatabase();
    db = await openDatabase({ databaseUrl: database.url, dataDir: '', poolMax: 4, prepare: TEST_PREPARE });
    await migrate(db);
    const [user] = await db.sql<{ id: number }[]>`
      INSERT INTO users (email, name) VALUES ('deadlock@example.test', 'D') RETURNING id`;
    const orders = await db.sql.unsafe<{ id: number }[]>(
      `INSERT INTO orders (customer_id, status, currency, total)
       SELECT $1::bigint, 'pending', 'EUR', 1 FROM generate_series(1, 2) ORDER BY 1 RETURNING id`,
      [user!.id],
    );
    [x, y] = orders.map((o) => Number(o.id)) as [number, number];
  });
  after(async () => {
    await db?.close();
    await database?.drop();
  });

  /** Sessions of this database waiting for a lock. */
  const waiting = async () =>
    (
      await db.sql.unsafe<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      )
    )[0]!.n;

  it("runs again, and its request gets the second attempt's answer", async () => {
    let holdsX!: () => void;
    const xHeld = new Promise<void>((resolve) => {
      holdsX = resolve;
    });
    // The other side: X, then (once the service's transaction waits for X) Y, which it gets when the service's is
    // rolled back; it commits, and the service's second attempt then takes Y and X.
    const other = serviceTransaction(db.sql, async (tx) => {
      await tx.unsafe(`SET LOCAL deadlock_timeout = '60s'`);
      await tx.unsafe('SELECT id FROM orders WHERE id = $1 FOR UPDATE', [x]);
      holdsX();
      await until(
        async () => (await waiting()) === 1,
        () => 'the service never waited for X',
      );
      await tx.unsafe('SELECT id FROM orders WHERE id = $1 FOR UPDATE', [y]);
      return 'committed';
    });
    await xHeld;
    const attempts: string[] = [];
    const service = db.begin(async (tx) => {
      attempts.push('y');
      await tx.one('LockOrder', [y, null]);
      attempts.push('x');
      await tx.one('LockOrder', [x, null]);
      return attempts.length;
    });
    assert.deepEqual(await Promise.all([service, other]), [4, 'committed']);
    assert.deepEqual(attempts, ['y', 'x', 'y', 'x']);
    assert.equal(await waiting(), 0);
  });
});
