/**
 * The statements a keyed `POST /orders` runs (issue 12, deliverable 5;
 * issue 35: one), pinned so that a regression shows: each is a round trip
 * to the database, one after another. Counted from the driver's own log of what it sends
 * (`debug`), on the connection of the request's transaction, with the
 * caller's token already cached (it is looked up once, not per request).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { QUERIES_DIR } from '../../src/db/database.ts';
import { loadStatements } from '../../src/db/statements.ts';
import { bearer, startTestServer, type Account, type TestServer } from '../support/server.ts';

let t: TestServer;
let admin: Account;
let alice: Account;

before(async () => {
  t = await startTestServer();
  admin = await t.user('admin');
  alice = await t.user('customer');
});
after(async () => {
  await t.close();
});

/** Statements of sql/queries by their text, to name what the driver sends. */
const NAMES = new Map([...loadStatements(QUERIES_DIR).values()].map((statement) => [statement.text, statement.name]));
/**
 * What the server runs on its own while a test waits: the webhook worker's polls, the hourly purges; in a run
 * with a read replica, its monitor's poll of the primary (`CurrentWalPosition`, the statement a write also runs
 * after its transaction to record its position: one more round trip, outside the transaction, with a replica).
 */
const BACKGROUND = new Set([
  'ClaimDeliveries',
  'RecordAttempt',
  'PurgeIdempotencyKeys',
  'PurgeEvents',
  'CurrentWalPosition',
]);

/**
 * The statements the server runs during `action`, each by the name of its
 * sql/queries header, or as its text (the transaction commands the driver
 * issues: begin, savepoint, rollback to, commit).
 */
async function statementsOf(action: () => Promise<void>): Promise<string[]> {
  const options = t.server.db.sql.options as unknown as { debug: unknown };
  const sent: string[] = [];
  const previous = options.debug;
  options.debug = (_connection: number, text: string) => {
    sent.push(NAMES.get(text) ?? text.trim());
  };
  try {
    await action();
  } finally {
    options.debug = previous;
  }
  return sent.filter((name) => !BACKGROUND.has(name));
}

async function post(account: Account, key: string, body: unknown): Promise<Response> {
  const response = await t.fetch('/v1/orders', {
    method: 'POST',
    headers: { ...bearer(account.token), 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify(body),
  });
  return response;
}

describe('a keyed POST /orders', () => {
  before(async () => {
    // Each caller's token is cached by its first request.
    for (const account of [admin, alice])
      assert.equal((await t.fetch('/v1/orders', { headers: bearer(account.token) })).status, 200);
  });

  it('runs 1 statement to create an order: the key claimed, the order, its event and its answer stored', async () => {
    const expected = ['CreateOrderKeyed'];
    for (const [account, body] of [
      [
        alice,
        {
          items: [
            { productId: 1, qty: 2 },
            { productId: 2, qty: 1 },
          ],
        },
      ],
      [admin, { customerId: alice.id, items: [{ productId: 1, qty: 1 }] }],
    ] as const) {
      let status = 0;
      const statements = await statementsOf(async () => {
        status = (await post(account, `count-${account.id}`, body)).status;
      });
      assert.equal(status, 201);
      assert.deepEqual(statements, expected);
    }
  });

  it('runs 1 statement when it is replayed', async () => {
    const body = { items: [{ productId: 1, qty: 3 }] };
    assert.equal((await post(alice, 'count-replay', body)).status, 201);
    let replayed: Response | undefined;
    const statements = await statementsOf(async () => {
      replayed = await post(alice, 'count-replay', body);
    });
    assert.equal(replayed?.status, 201);
    assert.equal(replayed?.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(statements, ['CreateOrderKeyed']);
  });

  it('runs 1 statement, then the 5 of the ordinary path when a rule refuses it, writing only the refusal', async () => {
    let response: Response | undefined;
    const statements = await statementsOf(async () => {
      response = await post(alice, 'count-refused', {
        items: [
          { productId: 1, qty: 1 },
          { productId: 999999, qty: 1 },
        ],
      });
    });
    assert.equal(response?.status, 422);
    // The one statement wrote nothing; the ordinary path decides the refusal again and stores it.
    assert.deepEqual(statements, [
      'CreateOrderKeyed',
      'BeginTransaction',
      'ClaimIdempotencyKey',
      'CreateOrder',
      'StoreIdempotencyKey',
      'CommitTransaction',
    ]);
  });
});

describe('the order.created event written with the order read back', () => {
  it("carries the order's v2 representation, exactly as GET /v2/orders/{id} shows it", async () => {
    for (const [key, body] of [
      ['event-one', { items: [{ productId: 1, qty: 2 }] }],
      [
        'event-three',
        {
          items: [
            { productId: 3, qty: 1 },
            { productId: 1, qty: 7 },
            { productId: 2, qty: 1000 },
          ],
        },
      ],
    ] as const) {
      const created = await post(alice, key, body);
      assert.equal(created.status, 201);
      const id = Number(created.headers.get('location')?.split('/').pop());
      const order = await (
        await t.fetch(`/v2/orders/${id}`, { headers: { ...bearer(alice.token), accept: 'application/json' } })
      ).json();
      const [event] = await t.server.db.sql<{ data: unknown; customer_id: number }[]>`
        SELECT data, customer_id FROM events WHERE type = 'order.created' AND (data ->> 'id')::bigint = ${id}`;
      assert.deepEqual(event, { data: order, customer_id: alice.id });
    }
  });
});

describe('the refusals decided by CreateOrder', () => {
  const orders = async () => (await t.server.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM orders`)[0]!.n;

  it('a total past numeric(12,2): 422 at /items, nothing written, the refusal stored and replayed', async () => {
    const [dear] = await t.server.db.sql<
      { id: number }[]
    >`INSERT INTO products (sku, name, price, currency) VALUES ('DEAR-1', 'Dear', 9999999.99, 'EUR') RETURNING id`;
    const before = await orders();
    const body = {
      items: [
        { productId: dear!.id, qty: 1000 },
        { productId: 1, qty: 1 },
      ],
    };
    const refused = await post(alice, 'too-dear', body);
    assert.equal(refused.status, 422);
    const replayed = await post(alice, 'too-dear', body);
    assert.equal(replayed.headers.get('idempotent-replayed'), 'true');
    const text = await replayed.text();
    assert.equal(text, await refused.text());
    assert.deepEqual(JSON.parse(text).errors, [
      { pointer: '/items', detail: 'make the order total exceed 9999999999.99' },
    ]);
    assert.equal(await orders(), before);
    // Just under the bound, it is an order.
    assert.equal((await post(alice, 'dear-enough', { items: [{ productId: dear!.id, qty: 1000 }] })).status, 201);
  });

  it('an unknown customer is named alone, before the items; then every item at fault, in order', async () => {
    const before = await orders();
    const items = [
      { productId: 999999, qty: 1 },
      { productId: 1, qty: 1 },
      { productId: 999998, qty: 1 },
    ];
    const response = await t.fetch('/v1/orders', {
      method: 'POST',
      headers: { ...bearer(admin.token), 'content-type': 'application/json', 'idempotency-key': 'unknown-customer' },
      body: JSON.stringify({ customerId: 999999, items }),
    });
    assert.equal(response.status, 422);
    assert.deepEqual((await response.json()).errors, [{ pointer: '/customerId', detail: 'there is no user 999999' }]);
    const unknownItems = await t.fetch('/v1/orders', {
      method: 'POST',
      headers: { ...bearer(admin.token), 'content-type': 'application/json', 'idempotency-key': 'unknown-items' },
      body: JSON.stringify({ customerId: alice.id, items }),
    });
    assert.deepEqual((await unknownItems.json()).errors, [
      { pointer: '/items/0/productId', detail: 'there is no product 999999' },
      { pointer: '/items/2/productId', detail: 'there is no product 999998' },
    ]);
    assert.equal(await orders(), before);
  });
});
