/**
 * The reads of one turn gathered into one statement (src/db/batch.ts): first
 * the gathering's rules on a fake runner (who leaves, what a failure does to
 * whom, the size bound), then the order reads on a real database (embedded by
 * default, a fresh one on the real server with DATABASE_URL), with the
 * statements the driver sends counted from its own log.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { batches, LEAST_WIDTH, MAX_BATCH, type BatchParam, type BatchRunner } from '../../src/db/batch.ts';
import type { BatchedRead, Db } from '../../src/db/database.ts';
import { QUERIES_DIR } from '../../src/db/database.ts';
import { RequestScope } from '../../src/db/cancellation.ts';
import { loadStatements } from '../../src/db/statements.ts';
import { essentialSql } from '../../src/orders/format.ts';
import { createTestDatabase, REAL_SERVER_URL, TEST_PREPARE, type TestDatabase } from '../support/database.ts';
import { startProxy, type TcpProxy } from '../support/proxy.ts';
import { bearer, startTestServer, type Account, type TestServer } from '../support/server.ts';
import { until } from '../support/tools.ts';

const READ: BatchedRead = { single: 'One', batch: 'Many' };
const JSON_READ: BatchedRead<'GetOrderJson'> = { single: 'GetOrderJson', batch: 'GetOrderJsonBatch' };
type Row = Record<string, unknown>;

/** A runner that records each call and answers the batch with a row per member whose first parameter is even. */
function fakeRunner(fail?: { batch?: unknown; single?: (params: readonly BatchParam[]) => unknown }) {
  const calls: string[] = [];
  const scopes: RequestScope[] = [];
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let hold = false;
  const runner: BatchRunner = {
    async single(name, params) {
      calls.push(`${name}(${params.join(',')})`);
      const error = fail?.single?.(params);
      if (error !== undefined) throw error;
      return Number(params[0]) % 2 === 0 ? [{ id: params[0] }] : [];
    },
    async batch(name, params, scope) {
      calls.push(`${name}(${params.join(';')})`);
      scopes.push(scope);
      let cancelled = false;
      scope.track('read', {
        state: 'sent',
        cancel: async () => {
          cancelled = true;
          calls.push('cancelled');
        },
      });
      if (hold) await held;
      if (cancelled) throw Object.assign(new Error('canceling statement due to user request'), { code: '57014' });
      if (fail?.batch !== undefined) throw fail.batch;
      const ids = (params[0] as string).slice(1, -1).split(',');
      return ids.flatMap((id, i) => (Number(id) % 2 === 0 ? [{ n: String(i + 1), id: Number(id) }] : []));
    },
  };
  return {
    runner,
    calls,
    holdBatches: () => {
      hold = true;
    },
    release: () => release(),
  };
}

const outcome = (p: Promise<Row | undefined>) =>
  p.then(
    (row) => ({ row }),
    (error: unknown) => ({ error: (error as { code?: string; name: string }).code ?? (error as Error).name }),
  );

describe('gathering the reads of one turn (fake runner)', () => {
  it('sends the reads asked in one turn as one statement, and hands each member its own row', async () => {
    const fake = fakeRunner();
    const gather = batches(fake.runner, MAX_BATCH, 0);
    const results = await Promise.all([2, 3, 4, 4].map((id, i) => gather(READ, [id, i === 1 ? null : 7], undefined)));
    assert.deepEqual(fake.calls, ['Many({2,3,4,4};{7,NULL,7,7})']);
    assert.deepEqual(results, [{ n: '1', id: 2 }, undefined, { n: '3', id: 4 }, { n: '4', id: 4 }]);
  });

  it(`pads the arrays of a batch under ${LEAST_WIDTH} members with NULL keys, which find no row`, async () => {
    const fake = fakeRunner();
    const gather = batches(fake.runner);
    const rows = await Promise.all([gather(READ, [2, 7], undefined), gather(READ, [4, null], undefined)]);
    assert.deepEqual(rows, [
      { n: '1', id: 2 },
      { n: '2', id: 4 },
    ]);
    const nulls = ',NULL'.repeat(LEAST_WIDTH - 2);
    assert.deepEqual(fake.calls, [`Many({2,4${nulls}};{7,NULL${nulls}})`]);
  });

  it('sends a batch of a read with halvesFrom in two statements from that many members, each its rows', async () => {
    const fake = fakeRunner();
    const gather = batches(fake.runner, MAX_BATCH, 0);
    const halved: BatchedRead = { ...READ, halvesFrom: 4 };
    const three = await Promise.all([2, 4, 6].map((id) => gather(halved, [id], undefined)));
    assert.deepEqual(three, [
      { n: '1', id: 2 },
      { n: '2', id: 4 },
      { n: '3', id: 6 },
    ]);
    const five = await Promise.all([8, 9, 10, 12, 14].map((id) => gather(halved, [id], undefined)));
    assert.deepEqual(five, [{ n: '1', id: 8 }, undefined, { n: '1', id: 10 }, { n: '2', id: 12 }, { n: '3', id: 14 }]);
    assert.deepEqual(fake.calls, ['Many({2,4,6})', 'Many({8,9})', 'Many({10,12,14})']);
  });

  it('runs a batch of one with the single statement, and reads of the next turn in a batch of their own', async () => {
    const fake = fakeRunner();
    const gather = batches(fake.runner, MAX_BATCH, 0);
    assert.deepEqual(await gather(READ, [2, null], undefined), { id: 2 });
    assert.deepEqual(await Promise.all([gather(READ, [6, 1], undefined), gather(READ, [8, 1], undefined)]), [
      { n: '1', id: 6 },
      { n: '2', id: 8 },
    ]);
    assert.deepEqual(fake.calls, ['One(2,)', 'Many({6,8};{1,1})']);
  });

  it(`takes at most ${MAX_BATCH} members: the next one starts another batch`, async () => {
    const fake = fakeRunner();
    const gather = batches(fake.runner, MAX_BATCH, 0);
    const ids = Array.from({ length: MAX_BATCH + 2 }, (_, i) => 2 * i);
    const rows = await Promise.all(ids.map((id) => gather(READ, [id], undefined)));
    assert.deepEqual(
      rows.map((row) => row?.id),
      ids,
    );
    assert.deepEqual(
      fake.calls.map((call) => call.split('(')[0]),
      ['Many', 'Many'],
    );
    assert.equal(fake.calls[1], `Many({${ids.slice(MAX_BATCH).join(',')}})`);
  });

  it('lets a member that gives up leave at once, the others going on', async () => {
    const fake = fakeRunner();
    fake.holdBatches();
    const gather = batches(fake.runner, MAX_BATCH, 0);
    const scopes = [new RequestScope(), new RequestScope(), new RequestScope()];
    const asked = [2, 4, 6].map((id, i) => outcome(gather(READ, [id], scopes[i])));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(scopes[1]?.abandon(), 'not-done');
    assert.deepEqual(await asked[1], { error: 'DATABASE_DEADLINE_EXCEEDED' });
    fake.release();
    assert.deepEqual(await Promise.all([asked[0], asked[2]]), [{ row: { n: '1', id: 2 } }, { row: { n: '3', id: 6 } }]);
    assert.deepEqual(fake.calls, ['Many({2,4,6})'], 'the statement was not cancelled');
  });

  it('cancels the statement once every member has left, and sends none when they left before it went', async () => {
    const fake = fakeRunner();
    fake.holdBatches();
    const gather = batches(fake.runner, MAX_BATCH, 0);
    const scopes = [new RequestScope(), new RequestScope()];
    const asked = [2, 4].map((id, i) => outcome(gather(READ, [id], scopes[i])));
    await new Promise((resolve) => setImmediate(resolve));
    for (const scope of scopes) scope.abandon();
    assert.deepEqual(await Promise.all(asked), [
      { error: 'DATABASE_DEADLINE_EXCEEDED' },
      { error: 'DATABASE_DEADLINE_EXCEEDED' },
    ]);
    assert.deepEqual(fake.calls, ['Many({2,4})', 'cancelled']);
    fake.release();

    const early = [new RequestScope(), new RequestScope()];
    const gone = [8, 10].map((id, i) => outcome(gather(READ, [id], early[i])));
    for (const scope of early) scope.abandon();
    assert.deepEqual(await Promise.all(gone), [
      { error: 'DATABASE_DEADLINE_EXCEEDED' },
      { error: 'DATABASE_DEADLINE_EXCEEDED' },
    ]);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(fake.calls, ['Many({2,4})', 'cancelled'], 'nothing sent for members gone before the turn ended');
  });

  it('runs each member alone when a batch fails for another reason than the database: only its own fails', async () => {
    const invalid = Object.assign(new Error('invalid input'), { code: '22P02' });
    const fake = fakeRunner({ batch: invalid, single: (params) => (params[0] === 4 ? invalid : undefined) });
    const gather = batches(fake.runner, MAX_BATCH, 0);
    const asked = await Promise.all([2, 4, 6].map((id) => outcome(gather(READ, [id], undefined))));
    assert.deepEqual(asked, [{ row: { id: 2 } }, { error: '22P02' }, { row: { id: 6 } }]);
    assert.deepEqual(fake.calls, ['Many({2,4,6})', 'One(2)', 'One(4)', 'One(6)']);
  });

  it('gives every member the failure that says the database is out of reach, running nothing more', async () => {
    const lost = Object.assign(new Error('connection lost'), { code: 'CONNECTION_CLOSED' });
    const fake = fakeRunner({ batch: lost });
    const gather = batches(fake.runner, MAX_BATCH, 0);
    const asked = await Promise.all([2, 4].map((id) => outcome(gather(READ, [id], undefined))));
    assert.deepEqual(asked, [{ error: 'CONNECTION_CLOSED' }, { error: 'CONNECTION_CLOSED' }]);
    assert.deepEqual(fake.calls, ['Many({2,4})']);
  });

  it('gives every member a cancelled statement (57014), running nothing more', async () => {
    const cancelled = Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' });
    const fake = fakeRunner({ batch: cancelled });
    const gather = batches(fake.runner, MAX_BATCH, 0);
    const asked = await Promise.all([2, 4].map((id) => outcome(gather(READ, [id], undefined))));
    assert.deepEqual(asked, [{ error: '57014' }, { error: '57014' }]);
    assert.deepEqual(fake.calls, ['Many({2,4})']);
  });

  it('counts the members waiting for their batch to go out, each as a statement waiting', async () => {
    const fake = fakeRunner();
    const gather = batches(fake.runner, MAX_BATCH, 0);
    const scopes = [new RequestScope(), new RequestScope(), new RequestScope()];
    const asked = [2, 4, 6].map((id, i) => outcome(gather(READ, [id], scopes[i])));
    assert.equal(gather.gathered, 3);
    scopes[0]?.abandon();
    assert.equal(gather.gathered, 2, 'one left before the batch went out');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(gather.gathered, 0, 'sent');
    assert.deepEqual(await Promise.all(asked), [
      { error: 'DATABASE_DEADLINE_EXCEEDED' },
      { row: { n: '1', id: 4 } },
      { row: { n: '2', id: 6 } },
    ]);
  });

  it('refuses a missing parameter, or one too many, never sent as NULL (an admin sees every row)', async () => {
    const fake = fakeRunner();
    const gather = batches(fake.runner, MAX_BATCH, 0);
    const first = gather(READ, [2, 7], undefined);
    await assert.rejects(gather(READ, [4, undefined as unknown as null], undefined), {
      name: 'TypeError',
      message: 'a batched read takes integers and NULL, not undefined',
    });
    await assert.rejects(gather(READ, [4], undefined), {
      name: 'TypeError',
      message: 'Many takes 2 parameters, not 1',
    });
    await assert.rejects(gather(READ, [4, 7, 8], undefined), {
      name: 'TypeError',
      message: 'Many takes 2 parameters, not 3',
    });
    assert.deepEqual(await first, { id: 2 });
    assert.deepEqual(fake.calls, ['One(2,7)']);
  });

  it('refuses a parameter that is not an integer or NULL, sending nothing', async () => {
    const fake = fakeRunner();
    const gather = batches(fake.runner, MAX_BATCH, 0);
    for (const wrong of [1.5, Number.NaN, 2 ** 53]) {
      await assert.rejects(gather(READ, [wrong], undefined), (error: unknown) => {
        assert.ok(error instanceof TypeError);
        assert.equal(error.message, `a batched read takes integers and NULL, not ${String(wrong)}`);
        return true;
      });
    }
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(fake.calls, []);
  });
});

describe('the order reads of one turn, on the database', () => {
  let t: TestServer;
  let admin: Account;
  let alice: Account;
  let bob: Account;
  const ids: number[] = [];
  let bobs = 0;
  const NAMES = new Map([...loadStatements(QUERIES_DIR).values()].map((s) => [s.text, s.name]));
  const JSON_V1: BatchedRead<'GetOrderJson'> = { single: 'GetOrderJson', batch: 'GetOrderJsonBatch' };
  const JSON_V2: BatchedRead<'GetOrderJsonV2'> = { single: 'GetOrderJsonV2', batch: 'GetOrderJsonV2Batch' };
  const REVISION: BatchedRead<'GetOrderRevision'> = { single: 'GetOrderRevision', batch: 'GetOrderRevisionBatch' };

  before(async () => {
    t = await startTestServer();
    admin = await t.user('admin');
    alice = await t.user('customer');
    bob = await t.user('customer');
    for (const [who, items] of [
      [alice, [{ productId: 1, qty: 2 }]],
      [
        alice,
        [
          { productId: 2, qty: 1 },
          { productId: 3, qty: 4 },
        ],
      ],
      [alice, [{ productId: 3, qty: 1 }]],
      [bob, [{ productId: 1, qty: 1 }]],
    ] as const) {
      const response = await t.fetch('/v1/orders', {
        method: 'POST',
        headers: { ...bearer(admin.token), 'content-type': 'application/json' },
        body: JSON.stringify({ customerId: who.id, items }),
      });
      assert.equal(response.status, 201);
      ids.push(Number(response.headers.get('location')?.split('/').pop()));
    }
    bobs = ids[3] as number;
  });
  after(async () => {
    await t.close();
  });

  /** The statements sent while `action` runs, by name; the server's own background statements left out. */
  async function sentDuring<T>(action: () => Promise<T>): Promise<{ value: T; sent: string[] }> {
    const options = t.server.db.sql.options as unknown as { debug: unknown };
    const previous = options.debug;
    const sent: string[] = [];
    options.debug = (_connection: number, text: string) => {
      const name = NAMES.get(text);
      if (name?.startsWith('GetOrder') === true) sent.push(name);
    };
    try {
      return { value: await action(), sent };
    } finally {
      options.debug = previous;
    }
  }

  it('reads the orders asked in one turn with one statement, each as its asker may see it, as alone', async () => {
    const asks: [number, number | null][] = [
      [ids[0] as number, alice.id],
      [bobs, alice.id],
      [ids[1] as number, null],
      [999_999_999, null],
      [ids[2] as number, alice.id],
      [bobs, bob.id],
      [ids[0] as number, alice.id],
    ];
    for (const read of [JSON_V1, JSON_V2, REVISION]) {
      const handles = asks.map(() => t.server.db.handle(new RequestScope()));
      const { value: together, sent } = await sentDuring(() =>
        Promise.all(asks.map((params, i) => (handles[i] as Db).batched(read, params))),
      );
      assert.deepEqual(sent, [read.batch], read.batch);
      const alone: (Row | undefined)[] = [];
      for (const params of asks) alone.push(await t.server.db.opt(read.single, params));
      assert.deepEqual(
        together.map((row) => (row === undefined ? undefined : { ...row, n: undefined })),
        alone.map((row) => (row === undefined ? undefined : { ...row, n: undefined })),
        read.batch,
      );
      assert.equal(together[1], undefined, "another customer's order is not seen, even in a shared statement");
      assert.equal(alone.filter((row) => row !== undefined).length, 5);
    }
  });

  it('reads a batch of 16 or more of a read with halvesFrom in two statements, each member its row', async () => {
    const halved: BatchedRead<'GetOrderJson'> = { ...JSON_V1, halvesFrom: 16 };
    const asks = Array.from({ length: 20 }, (_, i): [number, number | null] => [
      ids[i % 4] as number,
      i % 5 === 0 ? alice.id : null,
    ]);
    const { value: together, sent } = await sentDuring(() =>
      Promise.all(asks.map((params) => t.server.db.handle(new RequestScope()).batched(halved, params))),
    );
    assert.deepEqual(sent, ['GetOrderJsonBatch', 'GetOrderJsonBatch']);
    const alone: (Row | undefined)[] = [];
    for (const params of asks) alone.push(await t.server.db.opt(JSON_V1.single, params));
    assert.deepEqual(
      together.map((row) => (row === undefined ? undefined : { ...row, n: undefined })),
      alone.map((row) => (row === undefined ? undefined : { ...row, n: undefined })),
    );
    // Bob's order asked for as alice (places 15: ids[3] with alice's id) is not seen.
    assert.equal(together[15], undefined);
  });

  it('runs a read alone with its single statement, and a read in a transaction there', async () => {
    const { value: row, sent } = await sentDuring(() =>
      t.server.db.handle(new RequestScope()).batched(JSON_V1, [ids[0] as number, alice.id]),
    );
    assert.deepEqual(sent, ['GetOrderJson']);
    assert.deepEqual(row, await t.server.db.opt('GetOrderJson', [ids[0] as number, alice.id]));
    const inTransaction = await sentDuring(() =>
      t.server.db.begin((tx) =>
        Promise.all([tx.batched(REVISION, [ids[0] as number, null]), tx.batched(REVISION, [bobs, null])]),
      ),
    );
    assert.deepEqual(inTransaction.sent, ['GetOrderRevision', 'GetOrderRevision']);
    assert.equal(inTransaction.value.length, 2);
  });

  it("answers concurrent conditional GETs 304 for the asker's own order, 404 for another's, never 304", async () => {
    const own = await t.fetch(`/v1/orders/${ids[0]}`, { headers: bearer(alice.token) });
    const tag = own.headers.get('etag') as string;
    const bobTag = (await t.fetch(`/v1/orders/${bobs}`, { headers: bearer(bob.token) })).headers.get('etag') as string;
    const responses = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        i % 3 === 2
          ? t.fetch(`/v1/orders/${bobs}`, { headers: { ...bearer(alice.token), 'if-none-match': bobTag } })
          : t.fetch(`/v1/orders/${ids[0]}`, { headers: { ...bearer(alice.token), 'if-none-match': tag } }),
      ),
    );
    assert.deepEqual(
      responses.map((r) => r.status),
      Array.from({ length: 12 }, (_, i) => (i % 3 === 2 ? 404 : 304)),
    );
    for (const [i, response] of responses.entries()) if (i % 3 !== 2) assert.equal(response.headers.get('etag'), tag);
  });

  it('answers concurrent GETs of one order each with the bytes and tag of a GET alone, and others 404', async () => {
    const get = (id: number, who: Account) => t.fetch(`/v2/orders/${id}`, { headers: bearer(who.token) });
    const single = await get(ids[1] as number, alice);
    const body = await single.text();
    const tag = single.headers.get('etag');
    const responses = await Promise.all(
      Array.from({ length: 12 }, (_, i) => get(i % 3 === 2 ? bobs : (ids[1] as number), alice)),
    );
    for (const [i, response] of responses.entries()) {
      if (i % 3 === 2) {
        assert.equal(response.status, 404);
        assert.equal(response.headers.get('content-type'), 'application/problem+json');
      } else {
        assert.equal(response.status, 200);
        assert.equal(response.headers.get('etag'), tag);
        assert.equal(await response.text(), body);
      }
    }
  });
});

describe('the batch statements of sql/queries', () => {
  const statements = loadStatements(QUERIES_DIR);
  const text = (name: string) => essentialSql((statements.get(name) as { text: string }).text);
  /** What a statement selects and how, from its first column to its FROM of the orders (or of their keys). */
  const selected = (sql: string) => sql.slice(sql.indexOf('SELECT ') + 7, sql.lastIndexOf(' FROM '));

  it('select what their single statements select, with n first, over the keys with their owners', () => {
    for (const [single, batch, built] of [
      ['GetOrderJson', 'GetOrderJsonBatch', 'order_json_v1(o, o.id) j(body)'],
      ['GetOrderJsonV2', 'GetOrderJsonV2Batch', 'order_json_v2(o, o.id, o.currency) j(body)'],
      ['GetOrderRevision', 'GetOrderRevisionBatch', undefined],
    ] as const) {
      assert.equal(selected(text(batch)), `k.n::int AS n, ${selected(text(single))}`, batch);
      assert.equal(
        text(batch).slice(text(batch).lastIndexOf(' FROM ')),
        ' FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS k(id, owner, n) JOIN orders o ' +
          `ON o.id = k.id AND (k.owner IS NULL OR o.customer_id = k.owner)${built ? ` CROSS JOIN ${built}` : ''}`,
        batch,
      );
      assert.equal(
        text(single).slice(text(single).lastIndexOf(' FROM ')),
        ` FROM orders o${built ? `, ${built}` : ''} WHERE o.id = $1 AND ($2::bigint IS NULL OR o.customer_id = $2)`,
        single,
      );
    }
  });
});

describe('a batch statement on the database', {
  skip: TEST_PREPARE
    ? false
    : 'DB_PREPARE=off: every statement is unnamed, planned at each run whatever its parameters',
}, () => {
  let t: TestServer;
  before(async () => {
    // One connection: every statement below, and the read of its plans, on the same session.
    t = await startTestServer({ DB_POOL_MAX: '1' });
    // Enough orders, analyzed, that the planner prices each key's lookup (on a near-empty table every plan is
    // as cheap as every other, padded or not).
    const customer = await t.user('customer');
    await t.server.db.sql`
      INSERT INTO orders (customer_id, status, currency, total)
      SELECT ${customer.id}, 'pending', 'EUR', 0 FROM generate_series(1, 2000)`;
    await t.server.db.sql`ANALYZE orders`;
  });
  after(async () => {
    await t.close();
  });

  it(`keeps its generic plan after five runs, even in batches of 2 (padded to ${LEAST_WIDTH} places)`, async () => {
    const read: BatchedRead<'GetOrderRevision'> = { single: 'GetOrderRevision', batch: 'GetOrderRevisionBatch' };
    for (let run = 0; run < 8; run += 1) {
      const rows = await Promise.all(
        [run + 1, 999_999_999].map((id) => t.server.db.handle(new RequestScope()).batched(read, [id, null])),
      );
      assert.equal(rows[1], undefined);
    }
    const text = (loadStatements(QUERIES_DIR).get(read.batch) as { text: string }).text;
    const plans = await t.server.db.sql<{ generic: number; custom: number }[]>`
      SELECT generic_plans::int AS generic, custom_plans::int AS custom
      FROM pg_prepared_statements WHERE statement = ${text}`;
    // Unpadded, a batch of 2 has a custom plan cheaper than the generic one: planned anew each time (0 and 8).
    assert.deepEqual([...plans], [{ generic: 3, custom: 5 }]);
  });
});

describe('a connection lost under a batch', {
  skip:
    REAL_SERVER_URL === undefined ? 'needs the real PostgreSQL server (DATABASE_URL), reached through a proxy' : false,
}, () => {
  let database: TestDatabase;
  let proxy: TcpProxy;
  let t: TestServer;
  let admin: Account;
  let id = 0;

  before(async () => {
    database = await createTestDatabase();
    const target = database.target as NonNullable<TestDatabase['target']>;
    proxy = await startProxy({ host: target.host, port: target.port });
    const url = Object.assign(new URL(database.url), { hostname: '127.0.0.1', port: String(proxy.port) });
    t = await startTestServer({ DATABASE_URL: url.toString() }, database);
    admin = await t.user('admin');
    const created = await t.fetch('/v1/orders', {
      method: 'POST',
      headers: { ...bearer(admin.token), 'content-type': 'application/json' },
      body: JSON.stringify({ customerId: admin.id, items: [{ productId: 1, qty: 1 }] }),
    });
    assert.equal(created.status, 201);
    id = Number(created.headers.get('location')?.split('/').pop());
  });
  after(async () => {
    await t?.close();
    await proxy?.close();
    await database?.drop();
  });

  it("fails each member with the connection's failure, and each GET waiting on it with 503", async () => {
    // The batch is sent into a link that stops answering, then the link is cut.
    proxy.blackhole();
    const reads = [null, admin.id, null].map((owner) =>
      outcome(t.server.db.handle(new RequestScope()).batched(JSON_READ, [id, owner])),
    );
    await until(
      async () => t.server.db.pool.inUse > 0,
      () => 'the batch never took a connection',
    );
    await proxy.down({ reset: true });
    const codes = (await Promise.all(reads)).map((read) => ('error' in read ? read.error : 'a row'));
    assert.equal(codes.length, 3);
    assert.deepEqual(codes, [codes[0], codes[0], codes[0]], 'one failure, every member');
    assert.ok(['ECONNRESET', 'CONNECTION_CLOSED', 'CONNECTION_DESTROYED'].includes(String(codes[0])), String(codes[0]));

    // Through HTTP: the GETs waiting on the lost connection are each 503 `unavailable`, as a GET alone would be.
    await proxy.up();
    await until(
      async () => (await t.fetch(`/v1/orders/${id}`, { headers: bearer(admin.token) })).status === 200,
      () => 'the service did not come back after the link did',
    );
    proxy.blackhole();
    const waiting = Array.from({ length: 4 }, () => t.fetch(`/v1/orders/${id}`, { headers: bearer(admin.token) }));
    await until(
      async () => t.server.db.pool.inUse > 0,
      () => 'the GETs never took a connection',
    );
    await proxy.down({ reset: true });
    for (const response of await Promise.all(waiting)) {
      assert.equal(response.status, 503);
      assert.equal((await response.json()).type.split('/').pop(), 'unavailable');
    }
    await proxy.up();
  });
});
