/**
 * Hostile input never produces a 500 (issue 3): random JSON values through
 * the body schemas, random bytes and deeply nested JSON (issue 11, contract §11)
 * through the JSON parser, and random bodies, nested ones included, and
 * query strings sent to the running server.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { parseJson, validate } from '../../src/http/json-body.ts';
import { HttpError } from '../../src/http/problem.ts';
import { CreateOrderSchema, PatchOrderSchema, ReplaceOrderSchema } from '../../src/orders/rules.ts';
import { NewUserSchema } from '../../src/users/rules.ts';
import { bearer, startTestServer, type TestServer } from '../support/server.ts';

/** JSON values shaped like our bodies often enough to reach the deeper rules. */
const item = fc.record(
  {
    productId: fc.oneof(fc.integer({ min: -2, max: 30 }), fc.double(), fc.string(), fc.constant(null)),
    qty: fc.oneof(fc.integer({ min: -1, max: 1002 }), fc.double(), fc.string()),
  },
  { requiredKeys: [] },
);
const bodyish = fc.oneof(
  fc.jsonValue(),
  fc.record(
    {
      customerId: fc.oneof(fc.integer({ min: -1, max: 5 }), fc.string(), fc.constant(null), fc.double()),
      status: fc.oneof(
        fc.constantFrom('pending', 'paid', 'shipped', 'delivered', 'cancelled', ''),
        fc.string(),
        fc.constant(null),
      ),
      items: fc.oneof(fc.array(item, { maxLength: 4 }), fc.jsonValue()),
      email: fc.oneof(fc.emailAddress(), fc.string()),
      name: fc.string(),
      extra: fc.jsonValue(),
    },
    { requiredKeys: [] },
  ),
);

/**
 * JSON text nested `depth` levels deep (contract §11: 32 is the limit), arrays
 * and objects mixed, with brackets and escaped quotes inside the strings
 * that must not count, around a scalar; sometimes a member of a body.
 */
const deepJson = fc
  .record({
    depth: fc.oneof(
      fc.integer({ min: 1, max: 31 }),
      fc.integer({ min: 30, max: 35 }),
      fc.integer({ min: 36, max: 5_000 }),
      fc.constantFrom(2_500, 100_000),
    ),
    openers: fc.array(
      fc.oneof(
        fc.constant('['),
        fc.constantFrom('a', '[', '{', ']}', '"').map((key) => `{${JSON.stringify(key)}:`),
      ),
      { minLength: 1, maxLength: 6 },
    ),
    inner: fc.oneof(
      fc.integer().map(String),
      fc.string({ maxLength: 8 }).map((text) => JSON.stringify(text)),
      fc.constantFrom('null', '"[[[{{"', '"\\"]]}"', '"\\\\"', '[]', '{}'),
    ),
    member: fc.constantFrom(undefined, 'items', 'status', 'x'),
  })
  .map(({ depth, openers, inner, member }) => {
    const open: string[] = [];
    const close: string[] = [];
    for (let i = 0; i < depth; i += 1) {
      const opener = openers[i % openers.length] as string;
      open.push(opener);
      close.push(opener === '[' ? ']' : '}');
    }
    const value = open.join('') + inner + close.reverse().join('');
    // The inner `[]` or `{}` is one level more, and so is the body around a member.
    const levels = depth + (inner === '[]' || inner === '{}' ? 1 : 0) + (member === undefined ? 0 : 1);
    return { text: member === undefined ? value : `{${JSON.stringify(member)}:${value}}`, levels };
  });
const DEEP_DETAIL =
  'The request body is nested deeper than 32 levels of arrays and objects, the most this service accepts.';

describe('the body schemas, on random JSON values', () => {
  for (const [name, schema] of [
    ['CreateOrder', CreateOrderSchema],
    ['ReplaceOrder', ReplaceOrderSchema],
    ['PatchOrder', PatchOrderSchema],
    ['NewUser', NewUserSchema],
  ] as const) {
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
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 64 }),
          fc.string().map((s) => new TextEncoder().encode(s)),
          fc.jsonValue().map((v) => new TextEncoder().encode(JSON.stringify(v))),
        ),
        (bytes) => {
          try {
            parseJson(bytes);
          } catch (error) {
            assert.ok(error instanceof HttpError);
            assert.equal(error.slug, 'malformed-json');
          }
        },
      ),
      { numRuns: 3000 },
    );
  });
});

describe('parseJson(), on deeply nested JSON', () => {
  it('parses up to 32 levels and refuses deeper with 400 malformed-json naming the limit', () => {
    fc.assert(
      fc.property(deepJson, ({ text, levels }) => {
        if (levels <= 32) {
          assert.deepEqual(parseJson(new TextEncoder().encode(text)), JSON.parse(text));
          return;
        }
        assert.throws(
          () => parseJson(new TextEncoder().encode(text)),
          (error) =>
            error instanceof HttpError &&
            error.status === 400 &&
            error.slug === 'malformed-json' &&
            error.init.detail === DEEP_DETAIL,
        );
      }),
      { numRuns: 1000 },
    );
  });

  it('leaves what it parses safe to validate: a value or a 422, never a stack overflow', () => {
    fc.assert(
      fc.property(
        deepJson.filter(({ levels }) => levels <= 32),
        fc.constantFrom(CreateOrderSchema, ReplaceOrderSchema, PatchOrderSchema, NewUserSchema),
        ({ text }, schema) => {
          try {
            validate(schema, parseJson(new TextEncoder().encode(text)));
          } catch (error) {
            assert.ok(error instanceof HttpError, String(error));
            assert.equal(error.status, 422);
          }
        },
      ),
      { numRuns: 1000 },
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
    const response = await t.fetch('/v1/orders', {
      method: 'POST',
      headers: { ...bearer(token), 'content-type': 'application/json' },
      body: '{"items":[{"productId":1,"qty":1}]}',
    });
    orderId = (await response.json()).id;
  });
  after(async () => {
    await t.close();
  });

  const statusOf = async (path: string, init: RequestInit) => {
    const response = await t.fetch(path, init);
    const text = await response.text();
    assert.ok(
      response.status < 500,
      `${init.method ?? 'GET'} ${path} ${String(init.body ?? '')} → ${response.status} ${text}`,
    );
    if (response.status >= 400) assert.equal(response.headers.get('content-type'), 'application/problem+json');
    return response.status;
  };

  it('never answers 5xx to random order bodies', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          bodyish.map((v) => JSON.stringify(v)),
          fc.string(),
          deepJson.map(({ text }) => text),
        ),
        fc.constantFrom('POST', 'PUT', 'PATCH'),
        fc.boolean(),
        async (body, method, asAdmin) => {
          const path = method === 'POST' ? '/v1/orders' : `/v2/orders/${orderId}`;
          await statusOf(path, {
            method,
            headers: { ...bearer(asAdmin ? adminToken : token), 'content-type': 'application/json' },
            body,
          });
        },
      ),
      { numRuns: 250 },
    );
  });

  it('answers deeply nested bodies on every body route with 400 malformed-json past 32 levels, never 5xx', async () => {
    const routes = [
      { method: 'POST', path: () => '/v1/orders', admin: false, keyed: false },
      { method: 'POST', path: () => '/v1/orders', admin: false, keyed: true },
      { method: 'PUT', path: () => `/v1/orders/${orderId}`, admin: false, keyed: false },
      { method: 'PATCH', path: () => `/v2/orders/${orderId}`, admin: false, keyed: false },
      { method: 'POST', path: () => '/v1/payments', admin: false, keyed: true },
      { method: 'POST', path: () => '/v1/users', admin: true, keyed: false },
      { method: 'POST', path: () => '/v2/webhook-endpoints', admin: true, keyed: false },
    ];
    await fc.assert(
      fc.asyncProperty(deepJson, fc.constantFrom(...routes), async ({ text, levels }, route) => {
        const headers = {
          ...bearer(route.admin ? adminToken : token),
          'content-type': 'application/json',
          ...(route.keyed ? { 'idempotency-key': randomUUID() } : {}),
        };
        const response = await t.fetch(route.path(), { method: route.method, headers, body: text });
        const body = await response.text();
        const where = `${route.method} ${route.path()} at ${levels} levels → ${response.status} ${body.slice(0, 300)}`;
        if (levels > 32) {
          assert.equal(response.status, 400, where);
          assert.equal(response.headers.get('content-type'), 'application/problem+json');
          assert.equal(JSON.parse(body).type, '/problems/malformed-json', where);
          assert.equal(JSON.parse(body).detail, DEEP_DETAIL, where);
        } else {
          assert.ok(response.status < 500, where);
          assert.notEqual(response.status, 400, where);
        }
      }),
      { numRuns: 150 },
    );
  });

  it('never answers 5xx to random query strings', async () => {
    const query = fc.array(
      fc.tuple(
        fc.oneof(
          fc.constantFrom('page', 'pageSize', 'sort', 'status', 'customerId', 'minTotal', 'orderId'),
          fc.string({ maxLength: 6 }),
        ),
        fc.oneof(
          fc.string({ maxLength: 10 }),
          fc.integer().map(String),
          fc.constantFrom('-total,id', '1e309', '99999999999999999999', '0.001'),
        ),
      ),
      { maxLength: 5 },
    );
    await fc.assert(
      fc.asyncProperty(
        query,
        fc.constantFrom('/v1/orders', '/v1/order-items', '/v1/products', '/v1/users', '/v2/users/1/orders'),
        async (pairs, path) => {
          const search = new URLSearchParams(pairs);
          await statusOf(`${path}?${search.toString()}`, { headers: bearer(adminToken) });
        },
      ),
      { numRuns: 250 },
    );
  });
});
