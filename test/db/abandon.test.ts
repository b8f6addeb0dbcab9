/**
 * A 503 means not done (contract §17). A request that gives up abandons its
 * scope (src/db/scope.ts): a statement still waiting for a connection is
 * dropped and never runs, one under way is cancelled and its transaction
 * rolled back, and nothing more is sent; only a COMMIT (or a write outside a
 * transaction) sent and not answered is `unknown`. A connection lost under a
 * COMMIT is `OutcomeUnknown`. Through a proxy that takes the database away,
 * the circuit (src/db/circuit.ts) refuses statements at once, and the first
 * probe after the database returns closes it. Then over HTTP: requests that
 * were answered 503 while the database was out of reach leave nothing behind
 * when it returns, keyed or not.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDatabase, type Database } from '../../src/db/database.ts';
import { DatabaseUnreachable, OutcomeUnknown } from '../../src/db/errors.ts';
import { migrate } from '../../src/db/migrate.ts';
import { RequestScope } from '../../src/db/scope.ts';
import { createTestDatabase, REAL_SERVER_URL, TEST_PREPARE, type TestDatabase } from '../support/database.ts';
import { proxyToDatabase, type DatabaseProxy } from '../support/proxy.ts';
import { bearer, startTestServer } from '../support/server.ts';
import { until } from '../support/tools.ts';

const skip = REAL_SERVER_URL === undefined ? 'needs a real PostgreSQL server (CancelRequest, pg_sleep)' : false;

let database: TestDatabase;
let through: DatabaseProxy;
/** The pool the statements under test run on: one connection, through the proxy. */
let db: Database;
/** A pool of its own, straight to the database, to look at what was done. */
let look: Database;

before(async () => {
  database = await createTestDatabase();
  if (!database.real) return;
  through = await proxyToDatabase(database, 4);
  db = await openDatabase({ databaseUrl: through.url, dataDir: '', poolMax: 1, prepare: TEST_PREPARE });
  look = await openDatabase({ databaseUrl: database.url, dataDir: '', poolMax: 2, prepare: TEST_PREPARE });
  await migrate(look);
});
after(async () => {
  if (database.real) {
    await db.close(0);
    await look.close(0);
    await through.close();
  }
  await database.drop();
});

/** The number of events the statements below wrote with the mark `mark`. */
const events = async (mark: string) =>
  Number((await look.sql.unsafe("SELECT count(*) AS n FROM events WHERE data->>'mark' = $1", [mark]))[0]?.n);

/** Writes one event marked `mark` (an INSERT through the statement the service uses). */
const write = (on: { one: Database['one'] }, mark: string) =>
  on.one('InsertEvent', ['user.created', null, JSON.stringify({ mark })]);

/** The error `work` rejects with (it must reject). */
async function failure(work: Promise<unknown>): Promise<unknown> {
  try {
    await work;
  } catch (error) {
    return error;
  }
  throw new Error('it did not fail');
}

describe('abandoning a request (contract §17)', { skip }, () => {
  it('drops a statement still waiting for a connection: it never runs', async () => {
    // The pool's one connection is busy for 1 s (execute(): the driver's statements are lazy); the request's write
    // waits behind it.
    const busy = db.sql.unsafe('SELECT pg_sleep(1)').execute();
    const scope = new RequestScope();
    const waiting = failure(write(db.handle(scope), 'test.dropped'));
    assert.equal(scope.abandon(), 'not-done');
    assert.equal(((await waiting) as { code?: string }).code, '57014');
    await busy;
    assert.equal(await events('test.dropped'), 0);
    // Nothing more is sent for an abandoned scope.
    const late = await failure(write(db.handle(scope), 'test.dropped'));
    assert.equal((late as Error).name, 'DeadlineExceeded');
    assert.equal(await events('test.dropped'), 0);
  });

  it('cancels a statement under way and rolls its transaction back', async () => {
    // Another session locks the events: the request's INSERT is sent, and waits for the lock.
    const holder = await look.sql.reserve();
    await holder.unsafe('BEGIN');
    await holder.unsafe('LOCK TABLE events IN EXCLUSIVE MODE');
    try {
      const scope = new RequestScope();
      const transaction = failure(db.handle(scope).begin((tx) => write(tx, 'test.rolled-back')));
      await until(
        async () =>
          (
            await look.sql.unsafe(
              "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
            )
          ).length === 1,
        () => 'the INSERT never waited for the lock',
      );
      assert.equal(scope.abandon(), 'not-done');
      assert.equal(((await transaction) as { code?: string }).code, '57014');
    } finally {
      await holder.unsafe('ROLLBACK');
      holder.release();
    }
    assert.equal(await events('test.rolled-back'), 0);
  });

  it('says unknown when the COMMIT was sent and not answered', async () => {
    const scope = new RequestScope();
    let returned!: () => void;
    const returning = new Promise<void>((resolve) => {
      returned = resolve;
    });
    const committed = failure(
      db.handle(scope).begin(async (tx) => {
        await write(tx, 'test.unknown');
        // The COMMIT goes into a link that forwards nothing.
        through.proxy.blackhole();
        returned();
        return 'done';
      }),
    );
    // The work has returned, and the driver sends its COMMIT.
    await returning;
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(scope.abandon(), 'unknown');
    await through.proxy.up();
    // The stalled link is dropped (STALLED_CONNECTION_MS): the COMMIT's connection is lost, the outcome unknown.
    assert.ok((await committed) instanceof OutcomeUnknown);
    // Here it did not commit: the server never had the COMMIT.
    assert.equal(await events('test.unknown'), 0);
  });
});

describe('the circuit (contract §17)', { skip }, () => {
  it('refuses statements at once while the database is out of reach, and closes at the first probe back', async () => {
    await through.proxy.down();
    const codes: string[] = [];
    for (let i = 0; i < 6; i++) codes.push(((await failure(db.one('Ping'))) as { code: string }).code);
    // The first ones fail to connect; then they are refused unsent.
    assert.deepEqual(codes.slice(3), ['DATABASE_UNREACHABLE', 'DATABASE_UNREACHABLE', 'DATABASE_UNREACHABLE']);
    assert.ok((await failure(db.one('Ping'))) instanceof DatabaseUnreachable);
    assert.equal(db.pool.circuitOpen, true);
    await through.proxy.up();
    await until(
      async () => !db.pool.circuitOpen,
      () => 'the circuit did not close within 3 s of the database coming back',
      3_000,
    );
    assert.deepEqual(await db.one('Ping'), { ok: 1 });
  });
});

describe('over HTTP: a 503 while the database is out of reach leaves nothing behind', { skip }, () => {
  it('unkeyed and keyed POSTs answered 503 never create an order later', async () => {
    const proxied = await proxyToDatabase(database, 4);
    // Two connections: of six requests, two have their statements sent into the held link, four wait in the queue.
    const t = await startTestServer({ DATABASE_URL: proxied.url, RATE_LIMIT: 'off', DB_POOL_MAX: '2' }, database);
    try {
      const alice = await t.user('customer');
      const count = async () =>
        Number((await look.sql.unsafe('SELECT count(*) AS n FROM orders WHERE customer_id = $1', [alice.id]))[0]?.n);
      proxied.proxy.blackhole();
      const statuses = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          fetch(`${t.url}/v1/orders`, {
            method: 'POST',
            headers: {
              ...bearer(alice.token),
              'content-type': 'application/json',
              ...(i % 2 === 0 ? {} : { 'idempotency-key': `away-${i}` }),
            },
            body: '{"items":[{"productId":1,"qty":1}]}',
          }).then(async (r) => `${r.status} ${((await r.json()) as { type: string }).type}`),
        ),
      );
      for (const status of statuses) assert.equal(status, '503 /problems/unavailable');
      await proxied.proxy.up();
      // The service is back: what was queued or under way for those requests did not run, then or since.
      await until(
        async () => (await fetch(`${t.url}/readyz`)).status === 200,
        () => '/readyz did not answer 200 within 10 s of the database coming back',
        10_000,
      );
      assert.equal(await count(), 0);
    } finally {
      await t.close();
      await proxied.close();
    }
  });
});
