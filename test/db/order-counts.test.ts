/**
 * The kept order counts (migration 0007) behind `meta.total` (contract §2, §4):
 * after random inserts, status transitions, customer changes, deletes and
 * rolled-back transactions, on one connection and on many at once, the
 * counts in derived.order_counts equal count(*) of the orders, in every
 * snapshot; and the lists that read them answer exact totals.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDatabase, type Database } from '../../src/db/database.ts';

/** The driver's pool or a transaction of it: these statements are raw SQL, not named ones. */
type Queryable = Pick<Database['sql'], 'unsafe'>;
import { migrate, readMigrations } from '../../src/db/migrate.ts';
// The service's own transactions: the driver's sql.begin() needs pipelining, which a pooler run turns off.
import { serviceTransaction as transaction } from '../support/database.ts';
import { parseListQuery } from '../../src/http/list-query.ts';
import { ORDER_LIST, orderListSql } from '../../src/orders/order-list.ts';
import { createTestDatabase, TEST_PREPARE, REAL_SERVER_URL } from '../support/database.ts';
import { bearer, startTestServer, type Account, type TestServer } from '../support/server.ts';

const STATUSES = ['pending', 'paid', 'shipped', 'delivered', 'cancelled'] as const;
const ON_REAL_SERVER = REAL_SERVER_URL
  ? false
  : 'needs a real PostgreSQL server: the embedded one has a single connection, so its writers never run at once';

let t: TestServer;
let admin: Account;
let alice: Account;
let bob: Account;
let customers: number[];

before(async () => {
  t = await startTestServer();
  admin = await t.user('admin');
  alice = await t.user('customer');
  bob = await t.user('customer');
  const more = [await t.user('customer'), await t.user('customer'), await t.user('customer')];
  customers = [alice.id, bob.id, ...more.map((a) => a.id)];
});
after(async () => {
  await t.close();
});

type Count = [customerId: number, status: string, n: number];

/**
 * In one statement, so in one snapshot: the kept counts (summed over their
 * stripes, groups that sum to zero left out) and count(*) of the orders per
 * (customer, status), and per status as customer 0.
 */
async function keptAndCounted(on: Queryable): Promise<{ kept: Count[]; counted: Count[] }> {
  const [row] = await on.unsafe<{ kept: Count[]; counted: Count[] }[]>(`
    SELECT (SELECT coalesce(json_agg(json_build_array(customer_id, status, n) ORDER BY customer_id, status), '[]')
            FROM (SELECT customer_id, status, sum(n)::int AS n FROM derived.order_counts
                  GROUP BY 1, 2 HAVING sum(n) <> 0) AS k) AS kept,
           (SELECT coalesce(json_agg(json_build_array(customer_id, status, n) ORDER BY customer_id, status), '[]')
            FROM (SELECT customer_id, status, count(*)::int AS n FROM orders GROUP BY 1, 2
                  UNION ALL
                  SELECT 0, status, count(*)::int FROM orders GROUP BY 2) AS c) AS counted`);
  return row!;
}

async function assertExact(on: Queryable, context: string): Promise<Count[]> {
  const { kept, counted } = await keptAndCounted(on);
  assert.deepEqual(kept, counted, `kept counts differ from count(*) ${context}`);
  return counted;
}

/** A small deterministic generator (mulberry32), so a failure can be replayed from its seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}
const pick = <T>(values: readonly T[], rnd: () => number): T => values[Math.floor(rnd() * values.length)] as T;

// Orders without payments (a paid one cannot be deleted), chosen at random
// among those no other transaction holds: writers do not queue on the
// orders' rows, so a wait or a deadlock can only come from the counts.
const SOME_ORDERS = (limit: number, where = 'TRUE') =>
  `(SELECT o.id FROM orders o WHERE ${where} AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.order_id = o.id)
    ORDER BY random() LIMIT ${limit} FOR UPDATE SKIP LOCKED)`;

/** One random change to the orders, in a statement of the kind the service's or an operator's would be. */
async function change(on: Queryable, rnd: () => number): Promise<void> {
  const customer = () => pick(customers, rnd);
  const status = () => pick(STATUSES, rnd);
  const kind = rnd();
  if (kind < 0.3) {
    // Several orders in one statement: one transition table of many rows.
    const n = 1 + Math.floor(rnd() * 3);
    const who = Array.from({ length: n }, customer);
    const what = Array.from({ length: n }, status);
    await on.unsafe(
      `INSERT INTO orders (customer_id, status, currency, total)
       SELECT c, s, 'EUR', 10 FROM unnest($1::bigint[], $2::text[]) AS u (c, s)`,
      [`{${who.join(',')}}`, `{${what.join(',')}}`],
    );
  } else if (kind < 0.45) {
    await on.unsafe(`UPDATE orders SET status = $1 WHERE id IN ${SOME_ORDERS(1)}`, [status()]);
  } else if (kind < 0.55) {
    await on.unsafe(`UPDATE orders SET customer_id = $1 WHERE id IN ${SOME_ORDERS(1)}`, [customer()]);
  } else if (kind < 0.65) {
    await on.unsafe(`UPDATE orders SET customer_id = $1, status = $2 WHERE id IN ${SOME_ORDERS(1)}`, [
      customer(),
      status(),
    ]);
  } else if (kind < 0.72) {
    // Several rows of one group move in one statement.
    await on.unsafe(
      `UPDATE orders SET status = $1 WHERE id IN ${SOME_ORDERS(4, 'o.customer_id = $2 AND o.status = $3')}`,
      [status(), customer(), status()],
    );
  } else if (kind < 0.8) {
    // An update that moves nothing.
    await on.unsafe(`UPDATE orders SET total = total + 1 WHERE id IN ${SOME_ORDERS(1)}`);
  } else if (kind < 0.92) {
    await on.unsafe(`DELETE FROM orders WHERE id IN ${SOME_ORDERS(1)}`);
  } else {
    await on.unsafe(`DELETE FROM orders WHERE id IN ${SOME_ORDERS(3, 'o.customer_id = $1')}`, [customer()]);
  }
}

class Rollback extends Error {}
type Outcome = 'committed' | 'rolled back' | 'deadlock';

/**
 * A transaction of 1–4 random changes; some inside a savepoint that is rolled
 * back, and a quarter of the transactions rolled back whole.
 */
async function randomTransaction(db: Database, rnd: () => number): Promise<Outcome> {
  try {
    await transaction(db.sql, async (tx) => {
      const changes = 1 + Math.floor(rnd() * 4);
      for (let i = 0; i < changes; i++) {
        if (rnd() < 0.15) {
          await tx
            .savepoint(async (sp) => {
              await change(sp, rnd);
              throw new Rollback();
            })
            .catch((error: unknown) => {
              if (!(error instanceof Rollback)) throw error;
            });
        } else {
          await change(tx, rnd);
        }
      }
      if (rnd() < 0.25) throw new Rollback();
    });
    return 'committed';
  } catch (error) {
    if (error instanceof Rollback) return 'rolled back';
    // A transaction of several changes on a connection whose stripe another
    // shares can deadlock on counter rows (each change locks its rows in key
    // order, but two changes of one transaction follow no common order);
    // PostgreSQL rolls one back, and the counts must follow.
    if ((error as { code?: string }).code === '40P01') return 'deadlock';
    throw error;
  }
}

const tally = (outcomes: Outcome[]) =>
  Object.fromEntries(['committed', 'rolled back', 'deadlock'].map((o) => [o, outcomes.filter((x) => x === o).length]));

describe('orderListSql()', () => {
  const cases: [string, number[], string, string | undefined][] = [
    ['', [], 'ListOrdersKeptTotal', 'c.customer_id = 0'],
    ['status=paid', [], 'ListOrdersKeptTotal', 'c.customer_id = 0 AND c.status = $1'],
    ['customerId=7', [], 'ListOrdersKeptTotal', 'c.customer_id = $1'],
    ['customerId=7&status=paid&sort=-total', [], 'ListOrdersKeptTotal', 'c.customer_id = $1 AND c.status = $2'],
    ['status=paid', [3], 'ListOrdersKeptTotal', 'c.customer_id = $1 AND c.status = $2'],
    ['customerId=7', [3], 'ListOrdersKeptTotal', 'c.customer_id = $1 AND c.customer_id = $2'],
    ['minTotal=10', [], 'ListOrders', undefined],
    ['status=paid&customerId=7&minTotal=10', [3], 'ListOrders', undefined],
  ];
  for (const [qs, owners, list, totalWhere] of cases) {
    const within = owners.length > 0 ? ` within customer ${owners[0]}'s orders` : '';
    const how = totalWhere ? `from the kept counts where ${totalWhere}` : 'by counting the orders';
    it(`reads the total of ?${qs}${within} ${how}`, () => {
      const keys = { keys: [new Uint8Array(32)], principal: 'anyone' };
      const parsed = parseListQuery(new URLSearchParams(qs), ORDER_LIST, '/orders', keys);
      assert.ok(parsed.ok);
      const sql = orderListSql(parsed.value, owners);
      assert.equal(sql.list, list);
      assert.equal(sql.count, list === 'ListOrders' ? 'CountOrders' : 'SumOrderCounts');
      assert.equal(sql.totalWhere, totalWhere);
    });
  }
});

describe('migration 0007', () => {
  it('fills the counts from the orders that exist when it is applied', async () => {
    const database = await createTestDatabase();
    const db = await openDatabase({ databaseUrl: database.url, dataDir: '', poolMax: 1, prepare: TEST_PREPARE });
    try {
      const migrations = readMigrations();
      await migrate(
        db,
        migrations.filter((m) => m.version < '0007'),
      );
      const users = await db.sql<
        { id: number }[]
      >`INSERT INTO users (email, name) VALUES ('a@example.test', 'A'), ('b@example.test', 'B') RETURNING id`;
      await db.sql.unsafe(
        `INSERT INTO orders (customer_id, status, currency, total)
         SELECT $1::bigint + g % 2, (ARRAY['pending', 'paid', 'shipped'])[1 + g % 3], 'EUR', 1
         FROM generate_series(1, 30) AS g`,
        [users[0]!.id],
      );
      await migrate(
        db,
        migrations.filter((m) => m.version === '0007'),
      );
      const counted = await assertExact(db.sql, 'after the fill');
      assert.equal(counted.length, 6 + 3);
    } finally {
      await db.close();
      await database.drop();
    }
  });
});

describe('derived.order_counts', () => {
  it('stays exact through random changes and rolled-back savepoints and transactions on one connection', async () => {
    const db = t.server.db;
    await assertExact(db.sql, 'before any change');
    const rnd = random(12);
    const outcomes: Outcome[] = [];
    for (let i = 0; i < 150; i++) {
      outcomes.push(await randomTransaction(db, rnd));
      if (i % 10 === 0) await assertExact(db.sql, `after transaction ${i} (seed 12)`);
    }
    const counted = await assertExact(db.sql, 'at the end (seed 12)');
    assert.ok(counted.length >= 10, `too few groups to mean anything: ${JSON.stringify(counted)}`);
    const { committed, 'rolled back': rolledBack } = tally(outcomes);
    assert.ok(committed! > 50 && rolledBack! > 10, JSON.stringify(tally(outcomes)));
  });

  it('counts one order, several, and none, inserted or deleted by a statement (migration 0020)', async () => {
    const db = t.server.db;
    /** Every counter row's version: a statement that counts nothing must write none. */
    const versions = async () =>
      (
        await db.sql<{ v: string }[]>`SELECT string_agg(ctid::text || xmin::text, ',' ORDER BY ctid) AS v
        FROM derived.order_counts`
      )[0]!.v;
    const n = async (customer: number, status: string) =>
      (
        await db.sql<{ n: number }[]>`SELECT coalesce(sum(n), 0)::int AS n FROM derived.order_counts
        WHERE customer_id = ${customer} AND status = ${status}`
      )[0]!.n;
    const [all, own] = [await n(0, 'shipped'), await n(alice.id, 'shipped')];

    const [one] = await db.sql<{ id: number }[]>`INSERT INTO orders (customer_id, status, currency, total)
      VALUES (${alice.id}, 'shipped', 'EUR', 5) RETURNING id`;
    assert.deepEqual([await n(0, 'shipped'), await n(alice.id, 'shipped')], [all + 1, own + 1]);
    const several = await db.sql<{ id: number }[]>`INSERT INTO orders (customer_id, status, currency, total)
      VALUES (${alice.id}, 'shipped', 'EUR', 5), (${bob.id}, 'shipped', 'EUR', 5), (${alice.id}, 'shipped', 'EUR', 5)
      RETURNING id`;
    assert.deepEqual([await n(0, 'shipped'), await n(alice.id, 'shipped')], [all + 4, own + 3]);
    await assertExact(db.sql, 'after one order and three inserted');

    const before = await versions();
    await db.sql`INSERT INTO orders (customer_id, status, currency, total)
      SELECT ${alice.id}, 'shipped', 'EUR', 5 WHERE false`;
    await db.sql`DELETE FROM orders WHERE id = 0`;
    assert.equal(await versions(), before, 'statements that wrote no order wrote counter rows');

    await db.sql`DELETE FROM orders WHERE id = ${one!.id}`;
    assert.deepEqual([await n(0, 'shipped'), await n(alice.id, 'shipped')], [all + 3, own + 2]);
    await db.sql`DELETE FROM orders WHERE id IN ${db.sql(several.map((o) => o.id))}`;
    assert.deepEqual([await n(0, 'shipped'), await n(alice.id, 'shipped')], [all, own]);
    await assertExact(db.sql, 'after one order and three deleted');
  });

  describe('with many connections writing at once', { skip: ON_REAL_SERVER }, () => {
    let pool: Database;
    before(async () => {
      pool = await openDatabase({ databaseUrl: t.database.url, dataDir: '', poolMax: 12, prepare: TEST_PREPARE });
    });
    after(async () => {
      await pool.close();
    });

    it('equals count(*) in each snapshot as 12 connections and HTTP clients change orders, and after', async (test) => {
      let writing = true;
      const outcomes: Outcome[] = [];
      const writers = Array.from({ length: 12 }, async (_, w) => {
        const rnd = random(1000 + w);
        for (let i = 0; i < 60; i++) outcomes.push(await randomTransaction(pool, rnd));
      });
      // The service's own statements at the same time: POST, PATCH, DELETE.
      const http = (async () => {
        for (let i = 0; i < 30; i++) {
          const who = i % 2 === 0 ? alice : bob;
          const created = await t.fetch('/v1/orders', {
            method: 'POST',
            headers: { ...bearer(who.token), 'content-type': 'application/json' },
            body: JSON.stringify({ items: [{ productId: 1, qty: 1 }] }),
          });
          assert.equal(created.status, 201);
          const { id } = (await created.json()) as { id: number };
          if (i % 3 === 0) {
            const cancelled = await t.fetch(`/v1/orders/${id}`, {
              method: 'PATCH',
              headers: { ...bearer(admin.token), 'content-type': 'application/merge-patch+json' },
              body: JSON.stringify({ status: 'cancelled' }),
            });
            // The order may already be gone or moved by a writer. A deadlock with a writer on the same stripe of
            // the counts is run again by the service (src/db/transaction.ts, retryingConflicts), never a 500.
            const text = await cancelled.text();
            assert.ok([200, 404, 409].includes(cancelled.status), `${cancelled.status} ${text}`);
          } else if (i % 3 === 1) {
            const deleted = await t.fetch(`/v1/orders/${id}`, { method: 'DELETE', headers: bearer(admin.token) });
            assert.ok([204, 404].includes(deleted.status), `${deleted.status} ${await deleted.text()}`);
          }
        }
      })();
      let snapshots = 0;
      const checker = (async () => {
        while (writing) {
          await assertExact(pool.sql, `in snapshot ${snapshots}`);
          snapshots += 1;
        }
      })();
      try {
        await Promise.all([...writers, http]);
      } finally {
        writing = false;
        await checker;
      }
      const counted = await assertExact(pool.sql, 'at the end');
      const stripes = await pool.sql<
        { n: number }[]
      >`SELECT count(DISTINCT stripe)::int AS n FROM derived.order_counts`;
      const summary =
        `${JSON.stringify(tally(outcomes))}, ${snapshots} snapshots checked, ` +
        `${counted.length} groups, ${stripes[0]!.n} stripes written`;
      test.diagnostic(summary);
      assert.ok(snapshots >= 5 && tally(outcomes).committed! > 300 && tally(outcomes)['rolled back']! > 50, summary);
    });

    it("opposite moves of the same counter rows on one stripe's two connections wait, never deadlock", async (test) => {
      const stripeOf = async (db: Database) =>
        (await db.sql<{ s: number }[]>`SELECT (pg_backend_pid() % 64)::int AS s`)[0]!.s;
      const first = await openDatabase({ databaseUrl: t.database.url, dataDir: '', poolMax: 1, prepare: TEST_PREPARE });
      const target = await stripeOf(first);
      // Backend pids are handed out in turn: some later connection lands on the same stripe.
      let second: Database | undefined;
      for (let i = 0; i < 400 && second === undefined; i++) {
        const candidate = await openDatabase({
          databaseUrl: t.database.url,
          dataDir: '',
          poolMax: 1,
          prepare: TEST_PREPARE,
        });
        if ((await stripeOf(candidate)) === target) second = candidate;
        else await candidate.close();
        if (second !== undefined) test.diagnostic(`stripe ${target} again after ${i + 1} connections`);
      }
      try {
        assert.ok(second, 'no second connection on the same stripe in 400 attempts');
        const customer = bob.id;
        await first.sql.unsafe(
          `INSERT INTO orders (customer_id, status, currency, total)
           SELECT $1, s, 'EUR', 1 FROM unnest(ARRAY['pending', 'paid']) AS s, generate_series(1, 40)`,
          [customer],
        );
        // Each transaction moves one order and holds its counter rows a while, so the other waits on them.
        const mover = (db: Database, from: string, to: string) => async () => {
          for (let i = 0; i < 40; i++) {
            await transaction(db.sql, async (tx) => {
              await tx.unsafe(
                `UPDATE orders SET status = $1 WHERE id = (SELECT id FROM orders
                   WHERE customer_id = $2 AND status = $3 ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)`,
                [to, customer, from],
              );
              await tx.unsafe('SELECT pg_sleep(0.002)');
            });
          }
        };
        await Promise.all([mover(first, 'pending', 'paid')(), mover(second!, 'paid', 'pending')()]);
        // Neither transaction failed (a deadlock is an error: 40P01), and the counts are exact.
        await assertExact(first.sql, 'after the opposite moves');
      } finally {
        await first.close();
        await second?.close();
      }
    });
  });
});

describe('meta.total', () => {
  const get = async (path: string, who: Account) => {
    const response = await t.fetch(path, { headers: bearer(who.token) });
    assert.equal(response.status, 200, `${path}: ${await response.clone().text()}`);
    return (await response.json()) as { data: { id: number }[]; meta: { total: number; pageCount: number } };
  };
  const count = async (where: string, params: (string | number)[]) =>
    (await t.server.db.sql.unsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM orders WHERE ${where}`, params))[0]!
      .n;

  before(async () => {
    // Orders of every kind through the service too, so the totals are not all one status.
    for (const [who, status] of [
      [alice, 'pending'],
      [alice, 'cancelled'],
      [bob, 'pending'],
      [bob, 'cancelled'],
    ] as const) {
      const created = await t.fetch('/v1/orders', {
        method: 'POST',
        headers: { ...bearer(who.token), 'content-type': 'application/json' },
        body: JSON.stringify({ items: [{ productId: 2, qty: 3 }] }),
      });
      const { id } = (await created.json()) as { id: number };
      if (status !== 'pending') {
        await t.fetch(`/v1/orders/${id}`, {
          method: 'PATCH',
          headers: { ...bearer(who.token), 'content-type': 'application/merge-patch+json' },
          body: JSON.stringify({ status }),
        });
      }
    }
  });

  it('is exact for every status', async () => {
    for (const status of STATUSES) {
      assert.equal(
        (await get(`/v1/orders?status=${status}`, admin)).meta.total,
        await count('status = $1', [status]),
        status,
      );
    }
  });

  it('is exact for all orders, a customerId, and a customerId with a status', async () => {
    assert.equal((await get('/v1/orders', admin)).meta.total, await count('TRUE', []));
    for (const customer of customers) {
      assert.equal(
        (await get(`/v1/orders?customerId=${customer}`, admin)).meta.total,
        await count('customer_id = $1', [customer]),
      );
      for (const status of STATUSES) {
        assert.equal(
          (await get(`/v1/orders?customerId=${customer}&status=${status}&sort=-createdAt`, admin)).meta.total,
          await count('customer_id = $1 AND status = $2', [customer, status]),
        );
      }
    }
  });

  it("is exact for a customer's own list, with a status, and is 0 for another customer's id", async () => {
    assert.equal((await get('/v1/orders', alice)).meta.total, await count('customer_id = $1', [alice.id]));
    assert.equal(
      (await get('/v1/orders?status=pending', alice)).meta.total,
      await count('customer_id = $1 AND status = $2', [alice.id, 'pending']),
    );
    assert.equal(
      (await get(`/v1/orders?customerId=${alice.id}`, alice)).meta.total,
      await count('customer_id = $1', [alice.id]),
    );
    const other = await get(`/v1/orders?customerId=${bob.id}`, alice);
    assert.deepEqual([other.data, other.meta.total], [[], 0]);
    assert.equal(
      (await get(`/v1/users/${bob.id}/orders?status=cancelled`, bob)).meta.total,
      await count('customer_id = $1 AND status = $2', [bob.id, 'cancelled']),
    );
  });

  it('is exact on a page past the last, which has no row to carry it', async () => {
    // page=500: the deepest page of 20 that contract §4 lets a client ask for.
    const body = await get('/v1/orders?status=pending&page=500', admin);
    assert.deepEqual(body.data, []);
    assert.equal(body.meta.total, await count('status = $1', ['pending']));
    const own = await get('/v1/orders?page=500', alice);
    assert.equal(own.meta.total, await count('customer_id = $1', [alice.id]));
  });

  it('is counted, and exact, with minTotal', async () => {
    assert.equal((await get('/v1/orders?minTotal=10', admin)).meta.total, await count('total >= 10', []));
    assert.equal(
      (await get('/v1/orders?minTotal=10.5&status=pending', admin)).meta.total,
      await count('total >= 10.5 AND status = $1', ['pending']),
    );
    assert.equal(
      (await get(`/v1/orders?minTotal=0&customerId=${alice.id}`, alice)).meta.total,
      await count('customer_id = $1', [alice.id]),
    );
  });

  it('follows a change made through the API at once', async () => {
    const before = (await get('/v1/orders?status=cancelled', admin)).meta.total;
    const created = await t.fetch('/v1/orders', {
      method: 'POST',
      headers: { ...bearer(alice.token), 'content-type': 'application/json' },
      body: JSON.stringify({ items: [{ productId: 1, qty: 1 }] }),
    });
    const { id } = (await created.json()) as { id: number };
    const patched = await t.fetch(`/v1/orders/${id}`, {
      method: 'PATCH',
      headers: { ...bearer(alice.token), 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ status: 'cancelled' }),
    });
    assert.equal(patched.status, 200);
    assert.equal((await get('/v1/orders?status=cancelled', admin)).meta.total, before + 1);
    assert.equal((await t.fetch(`/v1/orders/${id}`, { method: 'DELETE', headers: bearer(admin.token) })).status, 204);
    assert.equal((await get('/v1/orders?status=cancelled', admin)).meta.total, before);
  });

  it('is read from the kept counts, not counted, when only status and customer filter', async () => {
    // Skew the kept count on purpose: the lists that read it show the skew, the counted one does not.
    await t.server.db.sql`UPDATE derived.order_counts SET n = n + 1000
      WHERE customer_id = 0 AND status = 'paid'
        AND stripe = (SELECT min(stripe) FROM derived.order_counts WHERE customer_id = 0 AND status = 'paid')`;
    try {
      const paid = await count('status = $1', ['paid']);
      assert.equal((await get('/v1/orders?status=paid', admin)).meta.total, paid + 1000);
      assert.equal((await get('/v1/orders?status=paid&minTotal=0', admin)).meta.total, paid);
    } finally {
      await t.server.db.sql`UPDATE derived.order_counts SET n = n - 1000
        WHERE customer_id = 0 AND status = 'paid'
          AND stripe = (SELECT min(stripe) FROM derived.order_counts WHERE customer_id = 0 AND status = 'paid')`;
    }
    await assertExact(t.server.db.sql, 'after the skew was undone');
  });
});

describe('TRUNCATE orders', () => {
  it('empties the counts, which count again from there', async () => {
    const db = t.server.db;
    await db.sql`TRUNCATE orders CASCADE`;
    assert.deepEqual(await keptAndCounted(db.sql), { kept: [], counted: [] });
    assert.equal((await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM derived.order_counts`)[0]!.n, 0);
    await db.sql`INSERT INTO orders (customer_id, status, currency, total)
      VALUES (${alice.id}, 'paid', 'EUR', 5), (${bob.id}, 'paid', 'EUR', 5)`;
    assert.deepEqual(await assertExact(db.sql, 'after TRUNCATE and INSERT'), [
      [0, 'paid', 2],
      [alice.id, 'paid', 1],
      [bob.id, 'paid', 1],
    ]);
  });
});
