/** Orders (contract §2, §3, §4, §6) over HTTP, on the database of this run. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bearer, startTestServer, type Account, type TestServer } from '../support/server.ts';

let t: TestServer;
let admin: Account;
let alice: Account;
let bob: Account;
let usdProduct: number;

before(async () => {
  t = await startTestServer();
  admin = await t.user('admin');
  alice = await t.user('customer');
  bob = await t.user('customer');
  const [row] = await t.server.db.sql<
    { id: number }[]
  >`INSERT INTO products (sku, name, price, currency) VALUES ('USD-001', 'Imported mug', 15.00, 'USD') RETURNING id`;
  usdProduct = row!.id;
});
after(async () => {
  await t.close();
});

function send(method: string, path: string, who: Account, body?: unknown, contentType = 'application/json') {
  return t.fetch(path, {
    method,
    headers: { ...bearer(who.token), ...(body === undefined ? {} : { 'content-type': contentType }) },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
}

async function create(who: Account, items: { productId: number; qty: number }[], customerId?: number) {
  const response = await send('POST', '/v1/orders', who, {
    ...(customerId === undefined ? {} : { customerId }),
    items,
  });
  assert.equal(response.status, 201, await response.clone().text());
  return response.json();
}

/** Sets an order's status directly: paid is reachable only through payments, which come later. */
async function force(id: number, status: string) {
  await t.server.db.sql`UPDATE orders SET status = ${status} WHERE id = ${id}`;
}

async function expectProblem(response: Response, status: number, type: string) {
  const text = await response.text();
  assert.equal(response.status, status, text);
  assert.equal(response.headers.get('content-type'), 'application/problem+json');
  const body = JSON.parse(text);
  assert.equal(body.type, `/problems/${type}`);
  return body;
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('POST /orders', () => {
  it('creates a pending order for the customer: 201, Location, the order with prices from the catalog', async () => {
    const response = await send('POST', '/v1/orders', alice, {
      items: [
        { productId: 1, qty: 2 },
        { productId: 3, qty: 1 },
      ],
    });
    assert.equal(response.status, 201);
    const order = await response.json();
    assert.equal(response.headers.get('location'), `/v1/orders/${order.id}`);
    assert.deepEqual(Object.keys(order), [
      'id',
      'customerId',
      'status',
      'currency',
      'total',
      'items',
      'createdAt',
      'updatedAt',
    ]);
    assert.equal(order.customerId, alice.id);
    assert.equal(order.status, 'pending');
    assert.equal(order.currency, 'EUR');
    assert.equal(order.total, 44.95);
    assert.deepEqual(
      order.items.map((i: Record<string, unknown>) => ({ ...i, id: 0 })),
      [
        { id: 0, orderId: order.id, productId: 1, qty: 2, unitPrice: 12.5 },
        { id: 0, orderId: order.id, productId: 3, qty: 1, unitPrice: 19.95 },
      ],
    );
    assert.ok(order.items[0].id < order.items[1].id);
    assert.match(order.createdAt, TIMESTAMP);
    assert.equal(order.updatedAt, order.createdAt);
  });

  it('answers version 2 with money objects and no top-level currency', async () => {
    const response = await send('POST', '/v2/orders', alice, { items: [{ productId: 8, qty: 3 }] });
    assert.equal(response.status, 201);
    const order = await response.json();
    assert.equal(response.headers.get('location'), `/v2/orders/${order.id}`);
    assert.deepEqual(order.total, { amount: '29.70', currency: 'EUR' });
    assert.deepEqual(order.items[0].unitPrice, { amount: '9.90', currency: 'EUR' });
    assert.equal('currency' in order, false);
  });

  it('computes totals exactly, without floating-point error', async () => {
    // 3 × 0.10 is 0.30000000000000004 in binary floating point.
    const [p] = await t.server.db.sql<
      { id: number }[]
    >`INSERT INTO products (sku, name, price, currency) VALUES ('DIME-001', 'Dime', 0.10, 'EUR') RETURNING id`;
    const order = await create(alice, [{ productId: p!.id, qty: 3 }]);
    assert.equal(order.total, 0.3);
    const v2 = await (await send('GET', `/v2/orders/${order.id}`, alice)).json();
    assert.deepEqual(v2.total, { amount: '0.30', currency: 'EUR' });
  });

  it('lets a customer name themselves as customerId', async () => {
    assert.equal((await create(alice, [{ productId: 2, qty: 1 }], alice.id)).customerId, alice.id);
  });

  it('refuses a customer creating an order for someone else: 403', async () => {
    await expectProblem(
      await send('POST', '/v1/orders', alice, { customerId: bob.id, items: [{ productId: 1, qty: 1 }] }),
      403,
      'forbidden',
    );
  });

  it('lets an admin create an order for a customer', async () => {
    assert.equal((await create(admin, [{ productId: 1, qty: 1 }], bob.id)).customerId, bob.id);
  });

  it('requires customerId from an admin, and a user that exists', async () => {
    const missing = await expectProblem(
      await send('POST', '/v1/orders', admin, { items: [{ productId: 1, qty: 1 }] }),
      422,
      'validation',
    );
    assert.deepEqual(missing.errors, [
      { pointer: '/customerId', detail: 'is required when an admin creates an order' },
    ]);
    const unknown = await expectProblem(
      await send('POST', '/v1/orders', admin, { customerId: 999999, items: [{ productId: 1, qty: 1 }] }),
      422,
      'validation',
    );
    assert.deepEqual(unknown.errors, [{ pointer: '/customerId', detail: 'there is no user 999999' }]);
  });

  describe('refuses an invalid body with 422 and a pointer per error', () => {
    const cases: [string, unknown, { pointer: string; detail: string }[]][] = [
      [
        'an unknown member',
        { items: [{ productId: 1, qty: 1 }], status: 'paid' },
        [{ pointer: '/status', detail: 'is not a member of this body' }],
      ],
      [
        'an unknown item member',
        { items: [{ productId: 1, qty: 1, unitPrice: 0.01 }] },
        [{ pointer: '/items/0/unitPrice', detail: 'is not a member of this body' }],
      ],
      ['no items', { items: [] }, [{ pointer: '/items', detail: 'must hold from 1 to 100 items' }]],
      [
        '101 items',
        { items: Array.from({ length: 101 }, (_, i) => ({ productId: i + 1, qty: 1 })) },
        [{ pointer: '/items', detail: 'must hold from 1 to 100 items' }],
      ],
      ['items missing', {}, [{ pointer: '/items', detail: 'is required' }]],
      ['items not an array', { items: { productId: 1 } }, [{ pointer: '/items', detail: 'must be an array of items' }]],
      [
        'qty 0',
        { items: [{ productId: 1, qty: 0 }] },
        [{ pointer: '/items/0/qty', detail: 'must be an integer from 1 to 1000' }],
      ],
      [
        'qty 1001',
        { items: [{ productId: 1, qty: 1001 }] },
        [{ pointer: '/items/0/qty', detail: 'must be an integer from 1 to 1000' }],
      ],
      [
        'qty 1.5',
        { items: [{ productId: 1, qty: 1.5 }] },
        [{ pointer: '/items/0/qty', detail: 'must be an integer from 1 to 1000' }],
      ],
      [
        'qty as a string',
        { items: [{ productId: 1, qty: '2' }] },
        [{ pointer: '/items/0/qty', detail: 'must be an integer from 1 to 1000' }],
      ],
      [
        'productId 0',
        { items: [{ productId: 0, qty: 1 }] },
        [{ pointer: '/items/0/productId', detail: 'must be a product id (a positive integer)' }],
      ],
      [
        'productId past 2^53',
        { items: [{ productId: 2 ** 53 + 2, qty: 1 }] },
        [{ pointer: '/items/0/productId', detail: 'must be a product id (a positive integer)' }],
      ],
      [
        'an unknown product',
        {
          items: [
            { productId: 1, qty: 1 },
            { productId: 999999, qty: 1 },
          ],
        },
        [{ pointer: '/items/1/productId', detail: 'there is no product 999999' }],
      ],
      [
        'a product twice',
        {
          items: [
            { productId: 1, qty: 1 },
            { productId: 2, qty: 1 },
            { productId: 1, qty: 5 },
          ],
        },
        [{ pointer: '/items/2/productId', detail: 'names product 1 again (already at /items/0)' }],
      ],
      ['null', null, [{ pointer: '', detail: 'must be a JSON object, not null' }]],
    ];
    for (const [what, body, errors] of cases) {
      it(`for ${what}`, async () => {
        const problem = await expectProblem(await send('POST', '/v1/orders', alice, body), 422, 'validation');
        assert.deepEqual(problem.errors, errors);
      });
    }

    it('for two currencies in one order', async () => {
      const problem = await expectProblem(
        await send('POST', '/v1/orders', alice, {
          items: [
            { productId: 1, qty: 1 },
            { productId: usdProduct, qty: 1 },
          ],
        }),
        422,
        'validation',
      );
      assert.deepEqual(problem.errors, [
        {
          pointer: '/items/1/productId',
          detail: "is priced in USD, the order's other items in EUR; an order has one currency",
        },
      ]);
    });

    it('lists every error at once', async () => {
      const problem = await expectProblem(
        await send('POST', '/v1/orders', alice, { items: [{ productId: -1, qty: 0 }], x: 1 }),
        422,
        'validation',
      );
      assert.deepEqual(problem.errors.map((e: { pointer: string }) => e.pointer).sort(), [
        '/items/0/productId',
        '/items/0/qty',
        '/x',
      ]);
    });
  });

  it('stores nothing for a refused body', async () => {
    const before = await t.server.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM orders`;
    await send('POST', '/v1/orders', alice, {
      items: [
        { productId: 1, qty: 1 },
        { productId: 999999, qty: 1 },
      ],
    });
    const after = await t.server.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM orders`;
    assert.equal(after[0]!.n, before[0]!.n);
  });

  it('answers malformed JSON with 400 malformed-json', async () => {
    for (const body of ['{"items": [', '', 'items=1', '{"a":1}{']) {
      await expectProblem(await send('POST', '/v1/orders', alice, body), 400, 'malformed-json');
    }
  });

  it('answers a body that is not JSON, or not UTF-8 JSON, with 415', async () => {
    await expectProblem(
      await send('POST', '/v1/orders', alice, '<order/>', 'application/xml'),
      415,
      'unsupported-media-type',
    );
    await expectProblem(
      await send('POST', '/v1/orders', alice, '{"items":[]}', 'application/json; charset=iso-8859-1'),
      415,
      'unsupported-media-type',
    );
    await expectProblem(
      await send('POST', '/v1/orders', alice, '{"items":[]}', 'application/merge-patch+json'),
      415,
      'unsupported-media-type',
    );
    const noType = await t.fetch('/v1/orders', {
      method: 'POST',
      headers: bearer(alice.token),
      body: new Uint8Array(Buffer.from('{}')),
    });
    await expectProblem(noType, 415, 'unsupported-media-type');
  });

  it('accepts the vendor media types and an explicit UTF-8 charset', async () => {
    for (const type of ['application/vnd.orders.v1+json', 'application/json; charset=UTF-8']) {
      assert.equal(
        (await send('POST', '/v1/orders', alice, { items: [{ productId: 5, qty: 1 }] }, type)).status,
        201,
        type,
      );
    }
  });

  it('needs orders:write', async () => {
    const reader = await t.user('customer', ['orders:read']);
    const response = await send('POST', '/v1/orders', reader, { items: [{ productId: 1, qty: 1 }] });
    assert.equal(response.status, 403);
    assert.equal(response.headers.get('www-authenticate'), 'Bearer error="insufficient_scope", scope="orders:write"');
  });
});

describe('GET /orders/{id}', () => {
  it('answers the owner and an admin with the same representation as in the list', async () => {
    const order = await create(alice, [{ productId: 4, qty: 2 }]);
    const own = await (await send('GET', `/v1/orders/${order.id}`, alice)).json();
    const asAdmin = await (await send('GET', `/v1/orders/${order.id}`, admin)).json();
    assert.deepEqual(own, order);
    assert.deepEqual(asAdmin, order);
    const list = await (await send('GET', `/v1/orders?sort=-id&pageSize=1`, alice)).json();
    assert.deepEqual(list.data[0], order);
  });

  it("answers 404 for another customer's order, exactly as for a missing one", async () => {
    const order = await create(bob, [{ productId: 1, qty: 1 }]);
    const other = await expectProblem(await send('GET', `/v1/orders/${order.id}`, alice), 404, 'not-found');
    const missing = await expectProblem(await send('GET', '/v1/orders/99999999', alice), 404, 'not-found');
    assert.equal(other.title, missing.title);
    assert.equal(other.detail, `There is no order ${order.id}.`);
  });
});

describe('captured prices', () => {
  it('never change when the catalog does; a new item takes the price of the moment', async () => {
    const [p] = await t.server.db.sql<
      { id: number }[]
    >`INSERT INTO products (sku, name, price, currency) VALUES ('VAR-001', 'Variable', 10.00, 'EUR') RETURNING id`;
    const order = await create(alice, [
      { productId: p!.id, qty: 1 },
      { productId: 1, qty: 1 },
    ]);
    await t.server.db.sql`UPDATE products SET price = 99.00 WHERE id = ${p!.id}`;
    await t.server.db.sql`UPDATE products SET price = 50.00 WHERE sku = 'STK-001'`;
    const stk = (await t.server.db.sql<{ id: number }[]>`SELECT id FROM products WHERE sku = 'STK-001'`)[0]!.id;
    assert.equal((await (await send('GET', `/v1/orders/${order.id}`, alice)).json()).total, 22.5);
    // Keep the variable product (qty changes), drop product 1, add STK-001.
    const response = await send('PATCH', `/v1/orders/${order.id}`, alice, {
      items: [
        { productId: p!.id, qty: 2 },
        { productId: stk, qty: 1 },
      ],
    });
    const changed = await response.json();
    assert.equal(response.status, 200);
    assert.deepEqual(
      changed.items.map((i: { productId: number; qty: number; unitPrice: number }) => [
        i.productId,
        i.qty,
        i.unitPrice,
      ]),
      [
        [p!.id, 2, 10],
        [stk, 1, 50],
      ],
    );
    assert.equal(changed.items[0].id, order.items[0].id, 'a kept line keeps its id');
    assert.equal(changed.total, 70);
    await t.server.db.sql`UPDATE products SET price = 4.99 WHERE sku = 'STK-001'`;
  });
});

describe('PUT /orders/{id}', () => {
  it('replaces the writable members', async () => {
    const order = await create(alice, [{ productId: 1, qty: 1 }]);
    const response = await send('PUT', `/v1/orders/${order.id}`, alice, {
      customerId: alice.id,
      status: 'pending',
      items: [{ productId: 2, qty: 4 }],
    });
    assert.equal(response.status, 200);
    const body = await response.json();
    assert.deepEqual(
      body.items.map((i: { productId: number; qty: number }) => [i.productId, i.qty]),
      [[2, 4]],
    );
    assert.equal(body.total, 99.6);
    assert.ok(body.updatedAt > order.updatedAt);
    assert.equal(body.createdAt, order.createdAt);
  });

  it('needs every member', async () => {
    const order = await create(alice, [{ productId: 1, qty: 1 }]);
    const problem = await expectProblem(
      await send('PUT', `/v1/orders/${order.id}`, alice, { items: [{ productId: 1, qty: 1 }] }),
      422,
      'validation',
    );
    assert.deepEqual(
      problem.errors.map((e: { pointer: string }) => e.pointer),
      ['/customerId', '/status'],
    );
  });

  it('lets an admin move the order to another customer, who must exist', async () => {
    const order = await create(alice, [{ productId: 1, qty: 1 }]);
    const moved = await send('PUT', `/v1/orders/${order.id}`, admin, {
      customerId: bob.id,
      status: 'pending',
      items: [{ productId: 1, qty: 1 }],
    });
    assert.equal((await moved.json()).customerId, bob.id);
    const problem = await expectProblem(
      await send('PUT', `/v1/orders/${order.id}`, admin, {
        customerId: 999999,
        status: 'pending',
        items: [{ productId: 1, qty: 1 }],
      }),
      422,
      'validation',
    );
    assert.deepEqual(problem.errors, [{ pointer: '/customerId', detail: 'there is no user 999999' }]);
  });

  it('refuses a customer changing customerId: 403', async () => {
    const order = await create(alice, [{ productId: 1, qty: 1 }]);
    await expectProblem(
      await send('PUT', `/v1/orders/${order.id}`, alice, {
        customerId: bob.id,
        status: 'pending',
        items: [{ productId: 1, qty: 1 }],
      }),
      403,
      'forbidden',
    );
  });

  it("answers 404 for another customer's order", async () => {
    const order = await create(bob, [{ productId: 1, qty: 1 }]);
    await expectProblem(
      await send('PUT', `/v1/orders/${order.id}`, alice, {
        customerId: alice.id,
        status: 'pending',
        items: [{ productId: 1, qty: 1 }],
      }),
      404,
      'not-found',
    );
  });

  it('lets an admin ship a paid order when the items stay the same', async () => {
    const order = await create(alice, [
      { productId: 1, qty: 1 },
      { productId: 2, qty: 2 },
    ]);
    await force(order.id, 'paid');
    const response = await send('PUT', `/v1/orders/${order.id}`, admin, {
      customerId: alice.id,
      status: 'shipped',
      items: [
        { productId: 2, qty: 2 },
        { productId: 1, qty: 1 },
      ],
    });
    assert.equal(response.status, 200);
    assert.equal((await response.json()).status, 'shipped');
  });
});

describe('PATCH /orders/{id} (JSON Merge Patch)', () => {
  it('changes only the members given', async () => {
    const order = await create(alice, [{ productId: 1, qty: 1 }]);
    const response = await send(
      'PATCH',
      `/v1/orders/${order.id}`,
      alice,
      { items: [{ productId: 1, qty: 3 }] },
      'application/merge-patch+json',
    );
    assert.equal(response.status, 200);
    const body = await response.json();
    assert.equal(body.status, 'pending');
    assert.equal(body.total, 37.5);
    assert.equal(body.items[0].id, order.items[0].id);
  });

  it('treats the same status as a successful no-op that changes nothing, not even updatedAt', async () => {
    const order = await create(alice, [{ productId: 1, qty: 1 }]);
    for (let i = 0; i < 2; i++) {
      const response = await send(
        'PATCH',
        `/v1/orders/${order.id}`,
        alice,
        { status: 'pending' },
        'application/merge-patch+json',
      );
      assert.equal(response.status, 200);
      assert.deepEqual(await response.json(), order);
    }
    assert.deepEqual(await (await send('PATCH', `/v1/orders/${order.id}`, alice, {})).json(), order);
  });

  it('refuses null members with 422', async () => {
    const order = await create(alice, [{ productId: 1, qty: 1 }]);
    const problem = await expectProblem(
      await send(
        'PATCH',
        `/v1/orders/${order.id}`,
        alice,
        { status: null, items: null },
        'application/merge-patch+json',
      ),
      422,
      'validation',
    );
    assert.deepEqual(problem.errors, [
      { pointer: '/status', detail: 'must not be null: no member of an order can be removed' },
      { pointer: '/items', detail: 'must not be null: no member of an order can be removed' },
    ]);
  });

  it('refuses unknown members and bad values with 422', async () => {
    const order = await create(alice, [{ productId: 1, qty: 1 }]);
    const problem = await expectProblem(
      await send('PATCH', `/v1/orders/${order.id}`, alice, { total: 0, status: 'lost' }),
      422,
      'validation',
    );
    assert.deepEqual(problem.errors, [
      { pointer: '/status', detail: 'must be one of pending, paid, shipped, delivered, cancelled' },
      { pointer: '/total', detail: 'is not a member of this body' },
    ]);
  });

  it('answers another media type with 415 and Accept-Patch', async () => {
    const order = await create(alice, [{ productId: 1, qty: 1 }]);
    const response = await send('PATCH', `/v1/orders/${order.id}`, alice, '{"status":"cancelled"}', 'text/plain');
    assert.equal(response.headers.get('accept-patch'), 'application/json, application/merge-patch+json');
    await expectProblem(response, 415, 'unsupported-media-type');
  });

  describe('status transitions (contract §3)', () => {
    it('lets the owning customer cancel a pending order', async () => {
      const order = await create(alice, [{ productId: 1, qty: 1 }]);
      const response = await send('PATCH', `/v1/orders/${order.id}`, alice, { status: 'cancelled' });
      assert.equal(response.status, 200);
      assert.equal((await response.json()).status, 'cancelled');
    });

    it('refuses pending → paid for everyone: only a payment does that', async () => {
      const order = await create(alice, [{ productId: 1, qty: 1 }]);
      const problem = await expectProblem(
        await send('PATCH', `/v1/orders/${order.id}`, admin, { status: 'paid' }),
        409,
        'invalid-transition',
      );
      assert.equal(problem.detail, 'An order goes from pending to paid only through a successful POST /payments.');
    });

    it('walks paid → shipped → delivered as an admin, and refuses the customer', async () => {
      const order = await create(alice, [{ productId: 1, qty: 1 }]);
      await force(order.id, 'paid');
      await expectProblem(
        await send('PATCH', `/v1/orders/${order.id}`, alice, { status: 'shipped' }),
        403,
        'forbidden',
      );
      await expectProblem(
        await send('PATCH', `/v1/orders/${order.id}`, alice, { status: 'cancelled' }),
        403,
        'forbidden',
      );
      assert.equal(
        (await (await send('PATCH', `/v1/orders/${order.id}`, admin, { status: 'shipped' })).json()).status,
        'shipped',
      );
      assert.equal(
        (await (await send('PATCH', `/v1/orders/${order.id}`, admin, { status: 'delivered' })).json()).status,
        'delivered',
      );
      const problem = await expectProblem(
        await send('PATCH', `/v1/orders/${order.id}`, admin, { status: 'pending' }),
        409,
        'invalid-transition',
      );
      assert.equal(problem.detail, 'An order cannot go from delivered to pending (delivered is final).');
    });

    it('lets an admin cancel a paid order', async () => {
      const order = await create(alice, [{ productId: 1, qty: 1 }]);
      await force(order.id, 'paid');
      assert.equal(
        (await (await send('PATCH', `/v1/orders/${order.id}`, admin, { status: 'cancelled' })).json()).status,
        'cancelled',
      );
    });

    const invalid: [string, string][] = [
      ['pending', 'shipped'],
      ['pending', 'delivered'],
      ['paid', 'pending'],
      ['paid', 'delivered'],
      ['shipped', 'cancelled'],
      ['cancelled', 'pending'],
    ];
    for (const [from, to] of invalid) {
      it(`refuses ${from} → ${to} with 409 naming both`, async () => {
        const order = await create(alice, [{ productId: 1, qty: 1 }]);
        await force(order.id, from);
        const problem = await expectProblem(
          await send('PATCH', `/v1/orders/${order.id}`, admin, { status: to }),
          409,
          'invalid-transition',
        );
        assert.match(problem.detail, new RegExp(`from ${from} to ${to}`));
        assert.equal((await (await send('GET', `/v1/orders/${order.id}`, admin)).json()).status, from);
      });
    }
  });

  it('refuses item changes once the order is not pending: 409 order-not-editable', async () => {
    for (const status of ['paid', 'shipped', 'delivered', 'cancelled']) {
      const order = await create(alice, [{ productId: 1, qty: 1 }]);
      await force(order.id, status);
      await expectProblem(
        await send('PATCH', `/v1/orders/${order.id}`, admin, { items: [{ productId: 1, qty: 2 }] }),
        409,
        'order-not-editable',
      );
      const unchanged = await (await send('GET', `/v1/orders/${order.id}`, admin)).json();
      assert.equal(unchanged.items[0].qty, 1);
    }
  });

  it('refuses a customer changing customerId, even to an existing user', async () => {
    const order = await create(alice, [{ productId: 1, qty: 1 }]);
    await expectProblem(await send('PATCH', `/v1/orders/${order.id}`, alice, { customerId: bob.id }), 403, 'forbidden');
  });
});

describe('DELETE /orders/{id}', () => {
  it('answers 204, then 404', async () => {
    const order = await create(alice, [{ productId: 1, qty: 1 }]);
    const first = await send('DELETE', `/v1/orders/${order.id}`, alice);
    assert.equal(first.status, 204);
    assert.equal(await first.text(), '');
    await expectProblem(await send('DELETE', `/v1/orders/${order.id}`, alice), 404, 'not-found');
    await expectProblem(await send('GET', `/v1/orders/${order.id}`, admin), 404, 'not-found');
    const items = await t.server.db.sql`SELECT 1 FROM order_items WHERE order_id = ${order.id}`;
    assert.equal(items.length, 0);
  });

  it("answers 404 for another customer's order and leaves it alone", async () => {
    const order = await create(bob, [{ productId: 1, qty: 1 }]);
    await expectProblem(await send('DELETE', `/v1/orders/${order.id}`, alice), 404, 'not-found');
    assert.equal((await send('GET', `/v1/orders/${order.id}`, bob)).status, 200);
  });
  // contract §4: its success has no body, so no Accept refuses it.
  for (const accept of ['application/problem+json', 'text/html', 'application/vnd.orders.v2+json']) {
    it(`deletes with Accept: ${accept} (204), and a problem answers in problem+json all the same`, async () => {
      const order = await create(alice, [{ productId: 1, qty: 1 }]);
      const deleted = await t.fetch(`/v1/orders/${order.id}`, {
        method: 'DELETE',
        headers: { ...bearer(alice.token), accept },
      });
      assert.equal(deleted.status, 204);
      assert.equal(deleted.headers.get('deprecation') !== null, true);
      const again = await t.fetch(`/v1/orders/${order.id}`, {
        method: 'DELETE',
        headers: { ...bearer(alice.token), accept },
      });
      await expectProblem(again, 404, 'not-found');
      await expectProblem(await send('GET', `/v1/orders/${order.id}`, admin), 404, 'not-found');
    });
  }

  it('still refuses a GET for its Accept: 406', async () => {
    const order = await create(alice, [{ productId: 1, qty: 1 }]);
    const response = await t.fetch(`/v1/orders/${order.id}`, {
      headers: { ...bearer(alice.token), accept: 'application/problem+json' },
    });
    await expectProblem(response, 406, 'not-acceptable');
  });
});
