/**
 * Hostile input never produces a 500 (issue 3): random JSON values through
 * the body schemas, random bytes through the JSON parser, and random bodies
 * and query strings sent to the running server.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { parseJson, validate } from '../src/http/json-body.ts';
import { HttpError } from '../src/http/problem.ts';
import { CreateOrderSchema, PatchOrderSchema, ReplaceOrderSchema } from '../src/orders/schema.ts';
import { NewUserSchema } from '../src/users/user-store.ts';
import { bearer, startTestServer, type TestServer } from './support/server.ts';

/** JSON values shaped like our bodies often enough to reach the deeper rules. */
const item = fc.record({ productId: fc.oneof(fc.integer({ min: -2, max: 30 }), fc.double(), fc.string(), fc.constant(null)), qty: fc.oneof(fc.integer({ min: -1, max: 1002 }), fc.double(), fc.string()) }, { requiredKeys: [] });
const bodyish = fc.oneof(
  fc.jsonValue(),
  fc.record({
    customerId: fc.oneof(fc.integer({ min: -1, max: 5 }), fc.string(), fc.constant(null), fc.double()),
    status: fc.oneof(fc.constantFrom('pending', 'paid', 'shipped', 'delivered', 'cancelled', ''), fc.string(), fc.constant(null)),
    items: fc.oneof(fc.array(item, { maxLength: 4 }), fc.jsonValue()),
    email: fc.oneof(fc.emailAddress(), fc.string()),
    name: fc.string(),
    extra: fc.jsonValue(),
  }, { requiredKeys: [] }),
);

describe('the body schemas, on random JSON values', () => {
  for (const [name, schema] of [['CreateOrder', CreateOrderSchema], ['ReplaceOrder', ReplaceOrderSchema], ['PatchOrder', PatchOrderSchema], ['NewUser', NewUserSchema]] as const) {
    it(`${name} returns a value or throws a 422 with JSON Pointers, nothing else`, () => {
      fc.assert(
        fc.property(bodyish, (value) => {
          try {
            validate(schema, value);
          } catch (error) {
            assert.ok(error instanceof HttpError, String(error));
            assert.equal(error.status, 422);
            for (const e of error.init.errors ?? []) assert.match('pointer' in e ? e.pointer : '', /^(\/[^/]*)*$/);
          }
        }),
        { numRuns: 2000 },
      );
    });
  }
});

describe('parseJson(), on random bytes', () => {
  it('returns a value or throws a 400 malformed-json', () => {
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 64 }), fc.string().map((s) => new TextEncoder().encode(s)), fc.jsonValue().map((v) => new TextEncoder().encode(JSON.stringify(v)))), (bytes) => {
        try {
          parseJson(bytes);
        } catch (error) {
          assert.ok(error instanceof HttpError);
          assert.equal(error.slug, 'malformed-json');
        }
      }),
      { numRuns: 3000 },
    );
  });
});

describe('the running server, on random bodies and query strings', () => {
  let t: TestServer;
  let token: string;
  let adminToken: string;
  let orderId: number;
  before(async () => {
    t = await startTestServer();
    const customer = await t.user('customer');
    token = customer.token;
    adminToken = (await t.user('admin')).token;
    const response = await t.fetch('/v1/orders', { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body: '{"items":[{"productId":1,"qty":1}]}' });
    orderId = (await response.json()).id;
  });
  after(async () => {
    await t.close();
  });

  const statusOf = async (path: string, init: RequestInit) => {
    const response = await t.fetch(path, init);
    const text = await response.text();
    assert.ok(response.status < 500, `${init.method ?? 'GET'} ${path} ${String(init.body ?? '')} → ${response.status} ${text}`);
    if (response.status >= 400) assert.equal(response.headers.get('content-type'), 'application/problem+json');
    return response.status;
  };

  it('never answers 5xx to random order bodies', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(bodyish.map((v) => JSON.stringify(v)), fc.string()), fc.constantFrom('POST', 'PUT', 'PATCH'), fc.boolean(), async (body, method, asAdmin) => {
        const path = method === 'POST' ? '/v1/orders' : `/v2/orders/${orderId}`;
        await statusOf(path, { method, headers: { ...bearer(asAdmin ? adminToken : token), 'content-type': 'application/json' }, body });
      }),
      { numRuns: 250 },
    );
  });

  it('never answers 5xx to random query strings', async () => {
    const query = fc.array(fc.tuple(fc.oneof(fc.constantFrom('page', 'pageSize', 'sort', 'status', 'customerId', 'minTotal', 'orderId'), fc.string({ maxLength: 6 })), fc.oneof(fc.string({ maxLength: 10 }), fc.integer().map(String), fc.constantFrom('-total,id', '1e309', '99999999999999999999', '0.001'))), { maxLength: 5 });
    await fc.assert(
      fc.asyncProperty(query, fc.constantFrom('/v1/orders', '/v1/order-items', '/v1/products', '/v1/users', '/v2/users/1/orders'), async (pairs, path) => {
        const search = new URLSearchParams(pairs);
        await statusOf(`${path}?${search.toString()}`, { headers: bearer(adminToken) });
      }),
      { numRuns: 250 },
    );
  });
});
