/**
 * What giving up does (contract §17; src/db/cancellation.ts), case by case
 * of its table, on the real server: a request's work is caught at each
 * stage (waiting for a connection, queued, pipelined, running, a transaction
 * open, its COMMIT written) by a lock another session holds or a proxy that
 * holds the link, and the request gives up. Each case checks the outcome
 * the request is told, what the database holds afterwards, and that the
 * connection is in step and outside any transaction (the next statement on
 * the pool of one gets its own answer, and no session of the database is
 * left idle in a transaction). Then the circuit, and over HTTP: requests
 * answered 503 while the database was out of reach leave nothing behind.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { caseOf, ON_ABANDON, RequestScope, type Resolution, stageOf } from '../../src/db/cancellation.ts';
import { openDatabase, type Database } from '../../src/db/database.ts';
import { IDLE_IN_TRANSACTION_MS, STATEMENT_TIMEOUT_MS } from '../../src/db/connection.ts';
import { DatabaseUnreachable, OutcomeUnknown } from '../../src/db/errors.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createTestDatabase, REAL_SERVER_URL, TEST_PREPARE, type TestDatabase } from '../support/database.ts';
import { proxyToDatabase, type DatabaseProxy } from '../support/proxy.ts';
import { bearer, startTestServer } from '../support/server.ts';
import { until } from '../support/tools.ts';

const skip = REAL_SERVER_URL === undefined ? 'needs a real PostgreSQL server (CancelRequest, locks)' : false;

describe('the table of cases (pure)', () => {
  it('says what each stage of each kind gets, and which may have been done', () => {
    assert.deepEqual(caseOf('waiting', 'transaction'), { action: 'never-start', outcome: 'not-done' });
    assert.deepEqual(caseOf('queued', 'write'), { action: 'drop', outcome: 'not-done' });
    assert.deepEqual(caseOf('pipelined', 'write'), { action: 'cancel', outcome: 'unknown' });
    assert.deepEqual(caseOf('running', 'read'), { action: 'cancel', outcome: 'not-done' });
    assert.deepEqual(caseOf('running', 'transaction'), { action: 'cancel', outcome: 'not-done' });
    assert.deepEqual(caseOf('open', 'transaction'), { action: 'roll-back', outcome: 'not-done' });
    assert.deepEqual(caseOf('committing', 'transaction'), { action: 'let-finish', outcome: 'unknown' });
    // Only a write outside a transaction once written, and a COMMIT written, may have been done.
    const unknown = Object.entries(ON_ABANDON).flatMap(([stage, kinds]) =>
      Object.entries(kinds)
        .filter(([, found]) => found.outcome === 'unknown')
        .map(([kind]) => `${stage} ${kind}`),
    );
    assert.deepEqual(unknown, ['pipelined write', 'running write', 'committing transaction']);
  });

  it('has no case for a pairing that cannot happen', () => {
    assert.throws(() => caseOf('committing', 'read'), /no case for a read at stage committing/);
  });

  it('tells where a statement stands from what the driver set on it', () => {
    const query = (state: unknown, active = false) => ({ state, active, cancel: async () => 'left' });
    assert.deepEqual(
      [stageOf(query(null)), stageOf(query({ pid: 1 }, false)), stageOf(query({ pid: 1 }, true))],
      ['queued', 'pipelined', 'running'],
    );
  });

  it('abandons once: a second call says what the first did', () => {
    const scope = new RequestScope();
    scope.track('write', { state: { pid: 1 }, active: true, cancel: async () => 'cancelled' });
    assert.deepEqual(
      [scope.abandon(), scope.abandon(), scope.outcome, scope.abandoned],
      ['unknown', 'unknown', 'unknown', true],
    );
  });
});

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
  db = await openDatabase({
    databaseUrl: through.url,
    dataDir: '',
    poolMax: 1,
    prepare: TEST_PREPARE,
    stalledConnectionMs: 1_000,
  });
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
async function failure(work: Promise<unknown>): Promise<{ code?: string; name?: string }> {
  try {
    await work;
  } catch (error) {
    return error as { code?: string; name?: string };
  }
  throw new Error('it did not fail');
}

/** Resolves once another session waits for a lock in the test database. */
const waitingForLock = () =>
  until(
    async () =>
      (
        await look.sql.unsafe(
          "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
        )
      ).length >= 1,
    () => 'no statement ever waited for the lock',
  );

/** Holds `mode` on `table` in a transaction of its own until the function returned is called. */
async function lock(table: string, mode: string): Promise<() => Promise<void>> {
  const holder = await look.sql.reserve();
  await holder.unsafe('BEGIN');
  await holder.unsafe(`LOCK TABLE ${table} IN ${mode} MODE`);
  return async () => {
    await holder.unsafe('ROLLBACK');
    holder.release();
  };
}

/**
 * The pool's connection is in step (a statement gets its own answer) and no session of the database is left in
 * a transaction, or aborted in one.
 */
async function inStep(): Promise<void> {
  assert.deepEqual(await db.one('Ping'), { ok: 1 });
  const stuck = await look.sql.unsafe(
    "SELECT state FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'",
  );
  assert.deepEqual([...stuck], []);
}

const IDLE_IN_TRANSACTION =
  "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction'";

/** A busy connection for `seconds`: the statements of the test queue (or pipeline) behind it. */
const busy = (seconds: number) => db.sql.unsafe(`SELECT pg_sleep(${seconds})`).execute();

describe('abandoning a request: each case of the table (contract §17)', { skip }, () => {
  it('waiting × transaction: never starts; the connection, once it comes, goes back unused', async () => {
    const sleeping = busy(0.5);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const scope = new RequestScope();
    let worked = false;
    const transaction = failure(
      db.handle(scope).begin(async (tx) => {
        worked = true;
        return write(tx, 'case.waiting');
      }),
    );
    assert.equal(scope.abandon(), 'not-done');
    await sleeping;
    assert.deepEqual([(await transaction).name, worked], ['DeadlineExceeded', false]);
    assert.equal(await events('case.waiting'), 0);
    await inStep();
  });

  it('queued × write: dropped, never written: it never runs', async () => {
    const sleeping = busy(0.5);
    // Through a pooler (no pipelining) and on the pool of one, the write waits behind it unwritten.
    if (!TEST_PREPARE) await new Promise((resolve) => setTimeout(resolve, 50));
    const scope = new RequestScope();
    const waiting = failure(write(db.handle(scope), 'case.queued'));
    assert.equal(scope.abandon(), 'not-done');
    assert.equal((await waiting).code, '57014');
    await sleeping;
    assert.equal(await events('case.queued'), 0);
    // Nothing more is sent for an abandoned scope.
    assert.equal((await failure(write(db.handle(scope), 'case.queued'))).name, 'DeadlineExceeded');
    assert.equal(await events('case.queued'), 0);
    await inStep();
  });

  it('pipelined × write: cancelled once it runs, when alone; unknown; each answer reaches its own', async (t) => {
    if (!TEST_PREPARE) return t.skip('no pipelining through a transaction-mode pooler (DB_PREPARE=off)');
    const sleeping = busy(0.3);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const scope = new RequestScope();
    const written = write(db.handle(scope), 'case.pipelined').then(
      (row) => row,
      (error: { code?: string }) => error.code,
    );
    await new Promise((resolve) => setImmediate(resolve));
    const behind = db.one('Ping');
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Written behind the busy statement: it may run before a cancel lands.
    assert.equal(scope.abandon(), 'unknown');
    await sleeping;
    const [row, ping] = await Promise.all([written, behind]);
    assert.deepEqual(ping, { ok: 1 });
    // Its own answer says what came of it, and the database agrees.
    if (row === '57014') assert.equal(await events('case.pipelined'), 0);
    else assert.deepEqual([typeof (row as { id?: unknown }).id, await events('case.pipelined')], ['number', 1]);
    await inStep();
  });

  it('running × read: cancelled; the next statement gets its own answer', async () => {
    const release = await lock('events', 'ACCESS EXCLUSIVE');
    try {
      const scope = new RequestScope();
      const reading = failure(db.handle(scope).opt('FindEventPosition', [1, null]));
      await waitingForLock();
      assert.equal(scope.abandon(), 'not-done');
      assert.equal((await reading).code, '57014');
    } finally {
      await release();
    }
    await inStep();
  });

  it('running × write: cancelled before it could write (the request was told it may have been done)', async () => {
    const release = await lock('events', 'EXCLUSIVE');
    try {
      const scope = new RequestScope();
      const writing = failure(write(db.handle(scope), 'case.running-write'));
      await waitingForLock();
      assert.equal(scope.abandon(), 'unknown');
      assert.equal((await writing).code, '57014');
    } finally {
      await release();
    }
    assert.equal(await events('case.running-write'), 0);
    await inStep();
  });

  it('running × transaction: its statement cancelled, the transaction rolled back, never committed', async () => {
    const release = await lock('events', 'EXCLUSIVE');
    try {
      const scope = new RequestScope();
      const transaction = failure(db.handle(scope).begin((tx) => write(tx, 'case.running-transaction')));
      await waitingForLock();
      assert.equal(scope.abandon(), 'not-done');
      assert.equal((await transaction).code, '57014');
    } finally {
      await release();
    }
    assert.equal(await events('case.running-transaction'), 0);
    await inStep();
  });

  it('open × transaction: nothing more is sent but ROLLBACK, and no COMMIT, whatever the work does', async () => {
    for (const next of ['a statement', 'the end of the work'] as const) {
      const scope = new RequestScope();
      let proceed!: () => void;
      const paused = new Promise<void>((resolve) => {
        proceed = resolve;
      });
      let wrote!: () => void;
      const written = new Promise<void>((resolve) => {
        wrote = resolve;
      });
      const transaction = failure(
        db.handle(scope).begin(async (tx) => {
          await write(tx, `case.open.${next}`);
          wrote();
          await paused;
          if (next === 'a statement') await write(tx, `case.open.${next}`);
          return 'done';
        }),
      );
      // The transaction stands open, its first statement answered, none under way.
      await written;
      assert.equal((await look.sql.unsafe(IDLE_IN_TRANSACTION)).length, 1);
      assert.equal(scope.abandon(), 'not-done');
      proceed();
      assert.equal((await transaction).name, 'DeadlineExceeded');
      assert.equal(await events(`case.open.${next}`), 0);
      await inStep();
    }
  });

  it('committing × transaction: unknown; what came of it is told once known (here: it committed)', async () => {
    const scope = new RequestScope();
    const told: Resolution[] = [];
    scope.resolved = (resolution) => told.push(resolution);
    const transaction = db.handle(scope).begin(async (tx) => {
      await write(tx, 'case.committing');
      // The COMMIT is written into a link that holds it (a server paused, a partition that heals).
      through.proxy.pause();
      return 'done';
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(scope.abandon(), 'unknown');
    through.proxy.resume();
    assert.equal(await transaction, 'done');
    assert.deepEqual(told, ['committed']);
    assert.equal(await events('case.committing'), 1);
    await inStep();
  });

  it('a COMMIT whose answer was lost is looked up: committed, the work succeeds; it is never unknown', async () => {
    const scope = new RequestScope();
    const transaction = db.handle(scope).begin(async (tx) => {
      await write(tx, 'case.lost-answer');
      // The COMMIT reaches the server; its answer never comes back. The stall timeout (1 s) drops the link.
      through.proxy.deafen();
      return 'done';
    });
    assert.equal(await transaction, 'done');
    assert.equal(await events('case.lost-answer'), 1);
    await through.proxy.up();
    await inStep();
  });

  it('a COMMIT that never reached the server is looked up: rolled back, 503 not done (not unknown)', async () => {
    const scope = new RequestScope();
    const transaction = failure(
      db.handle(scope).begin(async (tx) => {
        await write(tx, 'case.lost-commit');
        // The link stops forwarding with the COMMIT in it, then is cut (the server rolls back), and is back.
        through.proxy.blackhole();
        setTimeout(() => void through.proxy.down().then(() => through.proxy.up()), 200);
        return 'done';
      }),
    );
    const error = await transaction;
    assert.ok(!(error instanceof OutcomeUnknown), `${error.name}: ${error.code}`);
    assert.equal(error.code, 'CONNECTION_CLOSED');
    assert.equal(await events('case.lost-commit'), 0);
    await inStep();
  });

  it('a COMMIT lost while the database stays out of reach is unknown (OutcomeUnknown); here not done', async () => {
    const scope = new RequestScope();
    const transaction = failure(
      db.handle(scope).begin(async (tx) => {
        await write(tx, 'case.unknown');
        through.proxy.blackhole();
        return 'done';
      }),
    );
    assert.ok((await transaction) instanceof OutcomeUnknown);
    await through.proxy.up();
    assert.equal(await events('case.unknown'), 0);
    // The server still has the transaction open (its link was never closed), holding its locks: it ends it after
    // idle_in_transaction_session_timeout, which the service's sessions carry. Ended here at once.
    if (TEST_PREPARE) {
      const [setting] = await db.sql.unsafe('SHOW idle_in_transaction_session_timeout');
      assert.deepEqual(setting, { idle_in_transaction_session_timeout: `${IDLE_IN_TRANSACTION_MS / 1000}s` });
    }
    // pg_terminate_backend only signals a session (with a time-out, it waits for it to go); a session whose link
    // the pool has closed meanwhile ends by itself, a moment later. Either way, awaited until none is left.
    await look.sql.unsafe(
      `SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity
       WHERE datname = current_database() AND state = 'idle in transaction'`,
    );
    await until(
      async () => (await look.sql.unsafe(IDLE_IN_TRANSACTION)).length === 0,
      () => 'a session is still idle in a transaction',
    );
    await until(
      async () => (await db.one('Ping').catch(() => undefined)) !== undefined,
      () => 'the pool did not come back',
    );
    await inStep();
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

describe('over HTTP: a client that goes away abandons its request (contract §17)', { skip }, () => {
  it('a keyless POST whose client left while it waited for a lock is rolled back: no order, ever', async () => {
    // A deadline far off: only the client's going away can end the wait in time.
    const t = await startTestServer({ RATE_LIMIT: 'off' }, database, { databaseDeadlineMs: 120_000 });
    try {
      const alice = await t.user('customer');
      const release = await lock('orders', 'EXCLUSIVE');
      try {
        const { port } = new URL(t.url);
        const body = '{"items":[{"productId":1,"qty":7}]}';
        const sent = request({
          host: '127.0.0.1',
          port: Number(port),
          method: 'POST',
          path: '/v1/orders',
          headers: { ...bearer(alice.token), 'content-type': 'application/json', 'content-length': body.length },
        });
        sent.on('error', () => {});
        sent.end(body);
        await waitingForLock();
        // The client goes away while its INSERT waits: its transaction is abandoned.
        sent.destroy();
        const left = performance.now();
        await until(
          async () =>
            (
              await look.sql.unsafe(
                "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
              )
            ).length === 0,
          () => 'the abandoned INSERT still waits for the lock',
        );
        // Cancelled as the client left (tens of ms), not ended by the server's statement_timeout (5 s) nor the
        // request's far deadline: an order of events, with room for a loaded machine.
        const waited = performance.now() - left;
        assert.ok(
          waited < STATEMENT_TIMEOUT_MS / 2,
          `the INSERT waited ${Math.round(waited)} ms after the client left`,
        );
      } finally {
        await release();
      }
      const orders = await look.sql.unsafe('SELECT count(*)::int AS n FROM orders WHERE customer_id = $1', [alice.id]);
      assert.deepEqual([...orders], [{ n: 0 }]);
      await inStep();
    } finally {
      await t.close();
    }
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
