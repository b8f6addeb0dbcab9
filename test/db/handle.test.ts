/**
 * The database handles of src/db/database.ts on a real database (embedded by
 * default, a fresh one on the real server with DATABASE_URL): a handle from
 * `db.handle()` refuses statements while its own transaction is open
 * (TransactionOpenError), `savepoint()` on a transaction's handle rolls back
 * alone, `begin()` on it joins the transaction,
 * every statement runs only with the result shape its `-- name:` header
 * declares (StatementError), and the database itself is not guarded.
 *
 * Not tested: a `:one` statement that returns two rows. No statement in
 * sql/queries/ can (each `:one` is keyed by a unique column, a single
 * aggregate, or RETURNING of a single-row write), and composing a GROUP BY
 * into a count's `{{where}}` would be a fragment no caller writes.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { openDatabase, TransactionOpenError, type Database, type Db, type Tx } from '../../src/db/database.ts';
import { StatementError } from '../../src/db/statements.ts';
import type { LooseDb } from '../support/db-faults.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createTestDatabase, TEST_PREPARE, type TestDatabase } from '../support/database.ts';

let database: TestDatabase;
let db: Database;

before(async () => {
  database = await createTestDatabase();
  db = await openDatabase({ databaseUrl: database.url, dataDir: '', poolMax: 4, prepare: TEST_PREPARE });
  await migrate(db);
});
after(async () => {
  await db?.close();
  await database?.drop();
});

/** An e-mail address no other test uses. */
const email = (label: string) => `${label}-${randomBytes(4).toString('hex')}@db-handle.test`;
const insertUser = async (on: Db, address: string) => await on.one('InsertUser', [address, 'Handle Test', 'customer']);
/** Whether a user with this e-mail is committed, read on the pool. */
const exists = async (address: string) => (await db.opt('FindUserByEmail', [address])) !== undefined;

const openError = (statement: string) => (error: unknown) => {
  assert.ok(error instanceof TransactionOpenError, `not a TransactionOpenError: ${String(error)}`);
  assert.equal(error.name, 'TransactionOpenError');
  assert.match(error.message, new RegExp(`^${statement} ran on a handle whose transaction is open`));
  return true;
};
/** The pool as a test of the run-time checks sees it: any name, any method (the types refuse these calls). */
const loose = () => db as unknown as LooseDb;

const shapeError = (message: string) => (error: unknown) => {
  assert.ok(error instanceof StatementError, `not a StatementError: ${String(error)}`);
  assert.equal(error.message, message);
  return true;
};

describe('a handle from db.handle()', () => {
  it('refuses statements and begin() during its own transaction, which commits when work resolves', async () => {
    const handle = db.handle();
    const address = email('commit');
    const result = await handle.begin(async (tx) => {
      await insertUser(tx, address);
      await assert.rejects(handle.one('Ping'), openError('Ping'));
      await assert.rejects(handle.many('ListDemoUsers'), openError('ListDemoUsers'));
      await assert.rejects(handle.exec('PurgeIdempotencyKeys'), openError('PurgeIdempotencyKeys'));
      await assert.rejects(handle.composed('CountUsers', { where: 'true' }), openError('CountUsers'));
      await assert.rejects(
        handle.begin(async () => 'never'),
        openError('a transaction'),
      );
      // The transaction's own handle works meanwhile and sees its uncommitted row.
      assert.equal((await tx.opt('FindUserByEmail', [address]))?.email, address);
      return 'done';
    });
    assert.equal(result, 'done');
    assert.equal(await exists(address), true);
    assert.deepEqual(await handle.one('Ping'), { ok: 1 });
    assert.equal((await handle.opt('FindUserByEmail', [address]))?.email, address);
  });

  it('rolls the transaction back when the TransactionOpenError propagates out of work; then works again', async () => {
    const handle = db.handle();
    const address = email('rollback');
    await assert.rejects(
      handle.begin(async (tx) => {
        await insertUser(tx, address);
        await handle.exec('PurgeIdempotencyKeys');
        assert.fail('the handle ran a statement inside its own transaction');
      }),
      openError('PurgeIdempotencyKeys'),
    );
    assert.equal(await exists(address), false);
    assert.deepEqual(await handle.one('Ping'), { ok: 1 });
    const again = email('again');
    assert.equal((await handle.begin((tx) => insertUser(tx, again))).email, again);
    assert.equal(await exists(again), true);
  });

  it('is one of many: another handle of the same database is not refused (on the real server)', async (test) => {
    if (db.kind === 'embedded') {
      test.skip('the embedded database has one connection: the other handle would wait for the transaction');
      return;
    }
    const handle = db.handle();
    const other = db.handle();
    await handle.begin(async () => {
      assert.deepEqual(await other.one('Ping'), { ok: 1 });
    });
  });
});

describe('savepoint() and begin() on a transaction handle', () => {
  it('savepoint(): an error in the savepoint rolls back only its own work, the outer commits', async () => {
    const [outer, failed, kept, later] = [email('outer'), email('failed'), email('kept'), email('later')];
    const INNER = new Error('inner work fails');
    const inserted = await db.handle().begin(async (tx) => {
      await insertUser(tx, outer);
      await assert.rejects(
        tx.savepoint(async (sp) => {
          await insertUser(sp, failed);
          assert.equal((await sp.opt('FindUserByEmail', [failed]))?.email, failed);
          // The outer transaction's handle is refused while its savepoint is open.
          await assert.rejects(tx.one('Ping'), openError('Ping'));
          throw INNER;
        }),
        (error) => error === INNER,
      );
      assert.equal(await tx.opt('FindUserByEmail', [failed]), undefined);
      assert.equal((await tx.opt('FindUserByEmail', [outer]))?.email, outer);
      // A savepoint whose work resolves is released into the outer transaction.
      const inner = await tx.savepoint((sp) => insertUser(sp, kept));
      await insertUser(tx, later);
      return inner;
    });
    assert.equal(inserted.email, kept);
    assert.deepEqual(
      {
        outer: await exists(outer),
        failed: await exists(failed),
        kept: await exists(kept),
        later: await exists(later),
      },
      { outer: true, failed: false, kept: true, later: true },
    );
    assert.equal((await db.one('GetUser', [inserted.id])).email, kept);
  });

  it('a released savepoint is still rolled back with its outer transaction', async () => {
    const [outer, inner] = [email('outer-lost'), email('inner-lost')];
    const OUTER = new Error('outer work fails');
    await assert.rejects(
      db.begin(async (tx) => {
        await insertUser(tx, outer);
        await tx.savepoint((sp) => insertUser(sp, inner));
        throw OUTER;
      }),
      (error) => error === OUTER,
    );
    assert.deepEqual({ outer: await exists(outer), inner: await exists(inner) }, { outer: false, inner: false });
  });

  it('begin() joins the transaction: an error in it rolls all of it back, and the outer handle waits', async () => {
    const [outer, inner] = [email('joined-outer'), email('joined-inner')];
    const INNER = new Error('joined work fails');
    await assert.rejects(
      db.begin(async (tx) => {
        await insertUser(tx, outer);
        await tx.begin(async (joined) => {
          await insertUser(joined, inner);
          // Both rows are in the one transaction already.
          assert.equal((await joined.opt('FindUserByEmail', [outer]))?.email, outer);
          await assert.rejects(tx.one('Ping'), openError('Ping'));
          throw INNER;
        });
      }),
      (error) => error === INNER,
    );
    assert.deepEqual({ outer: await exists(outer), inner: await exists(inner) }, { outer: false, inner: false });
  });

  it('savepoint() on the pool is refused: it needs a transaction', async () => {
    const pool = db.handle() as Db & { savepoint?: unknown };
    assert.equal(typeof pool.savepoint, 'function');
    await assert.rejects(
      (pool as unknown as Tx).savepoint(async () => 1),
      /savepoint\(\) needs a transaction/,
    );
  });
});

describe('a transaction whose statement failed (contract §17: an acknowledged write is committed)', () => {
  it('begin() rejects with the statement error even when work caught it and resolved: nothing committed', async () => {
    const address = email('rolled-back');
    await assert.rejects(
      db.begin(async (tx) => {
        await insertUser(tx, address);
        // The second insert violates the unique e-mail and aborts the transaction; work swallows it.
        await assert.rejects(insertUser(tx, address), (error: { code?: string }) => error.code === '23505');
        return 'created';
      }),
      (error: { code?: string }) => error.code === '23505',
    );
    assert.equal(await exists(address), false);
  });

  it('a savepoint that rolled back leaves the transaction able to commit', async () => {
    const address = email('savepoint-recovers');
    await db.begin(async (tx) => {
      await insertUser(tx, address);
      await assert.rejects(
        tx.savepoint((inner) => insertUser(inner, address)),
        (error: { code?: string }) => error.code === '23505',
      );
    });
    assert.equal(await exists(address), true);
  });
});

describe('the declared result shape', () => {
  it('refuses a :many statement run through one()', async () => {
    await assert.rejects(
      loose().one('ListDemoUsers'),
      shapeError('ListDemoUsers is declared :many in users.sql but was run as :one'),
    );
  });

  it('refuses an :exec statement run through many()', async () => {
    await assert.rejects(
      loose().many('PurgeIdempotencyKeys'),
      shapeError('PurgeIdempotencyKeys is declared :exec in idempotency.sql but was run as :many'),
    );
  });

  it('refuses a :one statement run through exec(), before running it', async () => {
    await assert.rejects(loose().exec('Ping'), shapeError('Ping is declared :one in health.sql but was run as :exec'));
    const address = email('never');
    await assert.rejects(
      loose().exec('InsertUser', [address, 'Never', 'customer']),
      shapeError('InsertUser is declared :one in users.sql but was run as :exec'),
    );
    assert.equal(await exists(address), false);
  });

  it('refuses an :exec statement run through composed()', async () => {
    await assert.rejects(
      loose().composed('PurgeIdempotencyKeys', {}),
      shapeError('PurgeIdempotencyKeys is declared :exec in idempotency.sql but was run as :many'),
    );
  });

  it('refuses a statement name that no .sql file declares, on the pool and in a transaction', async () => {
    const unknown = shapeError('no SQL statement named NoSuchStatement in sql/queries/');
    await assert.rejects(loose().one('NoSuchStatement'), unknown);
    await assert.rejects(loose().many('NoSuchStatement'), unknown);
    await assert.rejects(loose().exec('NoSuchStatement'), unknown);
    await assert.rejects(
      db.begin((tx) => (tx as unknown as LooseDb).one('NoSuchStatement')),
      unknown,
    );
  });

  it('refuses a :one statement run through opt(): it always has its row', async () => {
    await assert.rejects(loose().opt('Ping'), shapeError('Ping is declared :one in health.sql but was run as :opt'));
  });

  it("gives an :opt statement's missing row as undefined through opt(), and as an error through one()", async () => {
    assert.equal(await db.opt('GetUser', [999_999_999]), undefined);
    await assert.rejects(
      db.one('GetUser', [999_999_999]),
      shapeError('GetUser returned no row where one must be (:opt, run with one())'),
    );
    const address = email('found');
    const user = await insertUser(db, address);
    assert.deepEqual(await db.one('GetUser', [user.id]), await db.opt('GetUser', [user.id]));
    assert.equal((await db.one('GetUser', [user.id])).email, address);
  });

  it('runs each shape through its own method', async () => {
    assert.deepEqual(await db.one('Ping'), { ok: 1 });
    assert.ok(Array.isArray(await db.many('ListDemoUsers')));
    assert.equal(typeof (await db.exec('PurgeIdempotencyKeys')), 'number');
    const [count, ...rest] = await db.composed('CountUsers', { where: 'true' });
    assert.deepEqual(rest, []);
    assert.equal(count?.total_count, (await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM users`)[0]?.n);
  });
});

describe('the database itself', () => {
  it('is not guarded: two statements on the pool run while a transaction of the pool is open', async () => {
    const address = email('pool');
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const transaction = db.begin(async (tx) => {
      await insertUser(tx, address);
      entered();
      await gate;
      return 'committed';
    });
    await inside;
    const pings = Promise.all([db.one('Ping'), db.one('Ping')]);
    if (db.kind === 'postgres') {
      // Other connections of the pool: both answer while the transaction still waits.
      assert.deepEqual(await pings, [{ ok: 1 }, { ok: 1 }]);
      release();
    } else {
      // One connection: both wait for the transaction, refused by nothing.
      release();
      assert.deepEqual(await pings, [{ ok: 1 }, { ok: 1 }]);
    }
    assert.equal(await transaction, 'committed');
    assert.equal(await exists(address), true);
  });
});
