/**
 * ClaimIdempotencyKey (sql/queries/idempotency.sql, migration 0009): the
 * advisory lock of (user, key) and the stored result in one statement, with
 * the meaning the two statements it replaces had (contract §7,
 * src/pipeline/idempotency.ts): the lock is tried first and the result read after,
 * so a result committed before the lock came free is always seen.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Database, Db } from '../../src/db/database.ts';
// The service's own transactions: the driver's sql.begin() needs pipelining, which a pooler run turns off.
import { serviceTransaction as transaction } from '../support/database.ts';
import { REAL_SERVER_URL } from '../support/database.ts';
import { bearer, startTestServer, type Account, type TestServer } from '../support/server.ts';

const ON_REAL_SERVER = REAL_SERVER_URL
  ? false
  : 'needs a real PostgreSQL server: the embedded one runs one transaction at a time';

let t: TestServer;
let db: Database;
let alice: Account;

before(async () => {
  t = await startTestServer();
  db = t.server.db;
  alice = await t.user('customer');
});
after(async () => {
  await t.close();
});

interface Claim {
  locked: boolean;
  fingerprint: string | null;
  status: number | null;
  headers: unknown;
  body: Uint8Array | null;
}

const claim = async (key: string, on: Db): Promise<Claim> => await on.one('ClaimIdempotencyKey', [alice.id, key]);
const store = (key: string, on: Db) =>
  on.exec('StoreIdempotencyKey', [
    alice.id,
    key,
    `fp-${key}`,
    201,
    JSON.stringify({ 'content-type': 'application/json' }),
    Buffer.from('{"id":1}'),
  ]);
const NOTHING = { fingerprint: null, status: null, headers: null, body: null };
const STORED = (key: string) => ({
  fingerprint: `fp-${key}`,
  status: 201,
  headers: { 'content-type': 'application/json' },
  body: Buffer.from('{"id":1}'),
});

/** Runs `fn` in a transaction that is rolled back, leaving nothing behind. */
async function rolledBack(fn: (tx: Db) => Promise<void>): Promise<void> {
  const ROLLBACK = new Error('rollback');
  await assert.rejects(
    db.begin((tx) => fn(tx).then(() => Promise.reject(ROLLBACK))),
    (error) => error === ROLLBACK,
  );
}

describe('ClaimIdempotencyKey', () => {
  it('takes the lock of a new key and finds no result', async () => {
    await rolledBack(async (tx) => {
      assert.deepEqual(await claim('new', tx), { locked: true, ...NOTHING });
    });
  });

  it('takes the lock of a finished key and returns its stored result', async () => {
    await store('finished', db);
    await rolledBack(async (tx) => {
      assert.deepEqual(await claim('finished', tx), { locked: true, ...STORED('finished') });
    });
  });

  it('finds no result for a key older than 24 hours', async () => {
    await store('expired', db);
    await db.sql`UPDATE idempotency_keys SET created_at = now() - interval '25 hours'
      WHERE user_id = ${alice.id} AND key = 'expired'`;
    await rolledBack(async (tx) => {
      assert.deepEqual(await claim('expired', tx), { locked: true, ...NOTHING });
    });
  });

  it('is the same lock the service takes for a request: a keyed POST with the key held gets 409', {
    skip: ON_REAL_SERVER,
  }, async () => {
    await rolledBack(async (tx) => {
      assert.equal((await claim('held-by-test', tx)).locked, true);
      const response = await t.fetch('/v1/orders', {
        method: 'POST',
        headers: { ...bearer(alice.token), 'content-type': 'application/json', 'idempotency-key': 'held-by-test' },
        body: JSON.stringify({ items: [{ productId: 1, qty: 1 }] }),
      });
      assert.equal(response.status, 409);
      assert.equal((await response.json()).type, '/problems/idempotency-key-in-use');
    });
  });

  describe('while another transaction holds the lock', { skip: ON_REAL_SERVER }, () => {
    /** Runs `fn` while a second transaction holds the lock of `key`. */
    async function whileHeld(key: string, fn: () => Promise<void>): Promise<void> {
      await rolledBack(async (holder) => {
        assert.equal((await claim(key, holder)).locked, true);
        await fn();
      });
    }

    it('without a result: the lock is not taken and nothing is found (the first request is running: 409)', async () => {
      await whileHeld('running', async () => {
        await rolledBack(async (tx) => {
          assert.deepEqual(await claim('running', tx), { locked: false, ...NOTHING });
        });
      });
    });

    it('with a result: the result is returned whoever holds the lock (a repeat is reading it: replay)', async () => {
      await store('replayed', db);
      await whileHeld('replayed', async () => {
        await rolledBack(async (tx) => {
          assert.deepEqual(await claim('replayed', tx), { locked: false, ...STORED('replayed') });
        });
      });
    });
  });

  it('sees a result committed after its statement began but before its lock was tried', {
    skip: ON_REAL_SERVER,
  }, async () => {
    // The first request holds the lock and has stored its result, uncommitted.
    let commitFirst!: () => void;
    const first = db.begin(async (tx) => {
      assert.equal((await claim('race', tx)).locked, true);
      await store('race', tx);
      await new Promise<void>((resolve) => (commitFirst = resolve));
    });
    while (commitFirst === undefined) await new Promise((resolve) => setTimeout(resolve, 5));
    // The repeat's statement takes its snapshot now, then waits before the
    // claim runs: meanwhile the first request commits and frees the lock.
    const repeat = transaction(db.sql, async (tx) => {
      const [row] = await tx.unsafe<(Claim & { seen_by_statement: number })[]>(
        `WITH s AS MATERIALIZED (SELECT $1::bigint AS user_id, pg_sleep(1) AS slept)
         SELECT c.*,
                (SELECT count(*)::int FROM idempotency_keys k WHERE k.user_id = s.user_id AND k.key = $2)
                  AS seen_by_statement
         FROM s CROSS JOIN LATERAL idempotency_claim(s.user_id, $2) c`,
        [alice.id, 'race'],
      );
      return row!;
    });
    for (;;) {
      // Asleep in pg_sleep, so past the statement's start and its snapshot ('active' alone may still be planning).
      const [active] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE state = 'active' AND wait_event = 'PgSleep' AND query LIKE '%pg_sleep(1)%' AND pid <> pg_backend_pid()`;
      if (active!.n > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    commitFirst();
    await first;
    const { seen_by_statement, ...claimed } = await repeat;
    assert.equal(seen_by_statement, 0, "the statement's own snapshot predates the commit");
    assert.deepEqual(
      claimed,
      { locked: true, ...STORED('race') },
      'the claim, after the lock, sees the committed result: a replay, never a second run',
    );
  });
});
