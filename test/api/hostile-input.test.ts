/**
 * Hostile request bodies and query strings over HTTP (issue 11, items 4, 9
 * and 10), on the database of this run: JSON nested past the limit of contract
 * §11 on every route that takes a body, bodies that are not objects (§4),
 * and problems whose `errors` list is capped and without repeats (§11).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { bearer, startTestServer, type Account, type TestServer } from '../support/server.ts';

let t: TestServer;
let admin: Account;
let alice: Account;
let orderId: number;

before(async () => {
  t = await startTestServer();
  admin = await t.user('admin');
  alice = await t.user('customer');
  const response = await send('POST', '/v1/orders', alice, '{"items":[{"productId":1,"qty":2}]}');
  assert.equal(response.status, 201);
  orderId = (await response.json()).id;
});
after(async () => {
  await t.close();
});

function send(method: string, path: string, who: Account, body: string, headers: Record<string, string> = {}) {
  return t.fetch(path, {
    method,
    headers: { ...bearer(who.token), 'content-type': 'application/json', ...headers },
    body,
  });
}

/** The problem body of `response`, after checking its status, slug and headers. */
async function expectProblem(response: Response, status: number, slug: string) {
  const text = await response.text();
  assert.equal(response.status, status, text);
  assert.equal(response.headers.get('content-type'), 'application/problem+json');
  assert.equal(response.headers.get('cache-control'), 'no-store');
  const body = JSON.parse(text);
  assert.equal(body.type, `/problems/${slug}`);
  assert.equal(body.status, status);
  return body;
}

/** `levels` arrays, one inside the other, around `inner`. */
const nested = (levels: number, inner = '') => '['.repeat(levels) + inner + ']'.repeat(levels);
const DEEP_DETAIL =
  'The request body is nested deeper than 32 levels of arrays and objects, the most this service accepts.';

/** Every route that takes a body, with who may call it and the headers it needs besides the body's type. */
const routes: {
  name: string;
  method: string;
  path: () => string;
  who: () => Account;
  headers?: () => Record<string, string>;
}[] = [
  { name: 'POST /orders', method: 'POST', path: () => '/v1/orders', who: () => alice },
  {
    name: 'POST /orders with an Idempotency-Key',
    method: 'POST',
    path: () => '/v1/orders',
    who: () => alice,
    headers: () => ({ 'idempotency-key': randomUUID() }),
  },
  { name: 'PUT /orders/{id}', method: 'PUT', path: () => `/v1/orders/${orderId}`, who: () => alice },
  { name: 'PATCH /orders/{id}', method: 'PATCH', path: () => `/v1/orders/${orderId}`, who: () => alice },
  {
    name: 'POST /payments',
    method: 'POST',
    path: () => '/v1/payments',
    who: () => alice,
    headers: () => ({ 'idempotency-key': randomUUID() }),
  },
  { name: 'POST /users', method: 'POST', path: () => '/v1/users', who: () => admin },
  { name: 'POST /webhook-endpoints', method: 'POST', path: () => '/v2/webhook-endpoints', who: () => admin },
];

describe('JSON nesting (contract §11: 32 levels)', () => {
  for (const route of routes) {
    describe(route.name, () => {
      const request = (body: string) => send(route.method, route.path(), route.who(), body, route.headers?.() ?? {});

      it('parses 32 levels (then validates: 422) and refuses 33 with 400 malformed-json naming the limit', async () => {
        // {"x": 31 arrays} is 32 levels: an unknown member, so 422 from validation, not a parse error.
        const ok = await expectProblem(await request(`{"x":${nested(31)}}`), 422, 'validation');
        assert.ok(
          ok.errors.some(
            (e: { pointer: string; detail: string }) =>
              e.pointer === '/x' && e.detail === 'is not a member of this body',
          ),
          JSON.stringify(ok),
        );
        for (const body of [`{"x":${nested(32)}}`, nested(33)]) {
          const problem = await expectProblem(await request(body), 400, 'malformed-json');
          assert.equal(problem.detail, DEEP_DETAIL);
          assert.equal('errors' in problem, false);
        }
      });

      it('refuses 100,000 levels with the same 400, never a 500', async () => {
        const problem = await expectProblem(
          await request(`{"x":${nested(100_000, '{"a":1}')}}`),
          400,
          'malformed-json',
        );
        assert.equal(problem.detail, DEEP_DETAIL);
      });
    });
  }

  it('refuses a deep merge patch with 400 and changes nothing, not even its valid members', async () => {
    const before = await (await t.fetch(`/v1/orders/${orderId}`, { headers: bearer(alice.token) })).json();
    await expectProblem(
      await send('PATCH', `/v1/orders/${orderId}`, alice, `{"status":"cancelled","x":${nested(100_000)}}`),
      400,
      'malformed-json',
    );
    const afterwards = await (await t.fetch(`/v1/orders/${orderId}`, { headers: bearer(alice.token) })).json();
    assert.deepEqual(afterwards, before);
  });
});

describe('a body that is not a JSON object (contract §4)', () => {
  const cases: [string, string][] = [
    ['[]', 'an array'],
    ['1', 'a number'],
    ['""', 'a string'],
    ['null', 'null'],
  ];
  for (const [body, kind] of cases) {
    it(`PATCH /orders/{id} with ${body} as the merge patch: 422 validation, the order unchanged`, async () => {
      const before = await (await t.fetch(`/v1/orders/${orderId}`, { headers: bearer(alice.token) })).json();
      for (const type of ['application/merge-patch+json', 'application/json']) {
        const problem = await expectProblem(
          await send('PATCH', `/v1/orders/${orderId}`, alice, body, { 'content-type': type }),
          422,
          'validation',
        );
        assert.equal(problem.detail, `The request body must be a JSON object, not ${kind}.`);
        assert.deepEqual(problem.errors, [{ pointer: '', detail: `must be a JSON object, not ${kind}` }]);
      }
      const afterwards = await (await t.fetch(`/v1/orders/${orderId}`, { headers: bearer(alice.token) })).json();
      assert.deepEqual(afterwards, before);
    });
  }

  it('POST /orders with [] says the body must be an object', async () => {
    const problem = await expectProblem(await send('POST', '/v1/orders', alice, '[]'), 422, 'validation');
    assert.equal(problem.detail, 'The request body must be a JSON object, not an array.');
    assert.deepEqual(problem.errors, [{ pointer: '', detail: 'must be a JSON object, not an array' }]);
  });

  it('POST /orders with an array for an item names the item once', async () => {
    const problem = await expectProblem(await send('POST', '/v1/orders', alice, '{"items":[[]]}'), 422, 'validation');
    assert.equal(problem.detail, 'The request body is invalid at /items/0.');
    assert.deepEqual(problem.errors, [{ pointer: '/items/0', detail: 'must be a JSON object, not an array' }]);
  });
});

describe('the errors list of a problem (contract §11: at most 20, each once)', () => {
  it('a 14 KB query of 2,000 unknown parameters: 20 errors, the detail says how many more, a small body', async () => {
    const search = Array.from({ length: 2000 }, (_, i) => `x${i}=1`).join('&');
    assert.ok(search.length > 14_000);
    const response = await t.fetch(`/v1/orders?${search}`, { headers: bearer(alice.token) });
    const text = await response.clone().text();
    const problem = await expectProblem(response, 400, 'invalid-query');
    const first = Array.from({ length: 20 }, (_, i) => `x${i}`);
    assert.deepEqual(
      problem.errors,
      first.map((parameter) => ({
        parameter,
        detail: 'is not a parameter of this collection; use page, pageSize, sort, cursor, status, customerId, minTotal',
      })),
    );
    assert.equal(
      problem.detail,
      `The query parameters ${first.join(', ')} are invalid. 1980 more errors are not listed.`,
    );
    assert.ok(Buffer.byteLength(text) < 3_000, `${Buffer.byteLength(text)} bytes`);
  });

  it('a sort key given twice as unknown is listed once', async () => {
    const problem = await expectProblem(
      await t.fetch('/v1/orders?sort=nope,nope', { headers: bearer(alice.token) }),
      400,
      'invalid-query',
    );
    assert.deepEqual(problem.errors, [
      { parameter: 'sort', detail: 'has the unknown sort key "nope"; use id, status, createdAt, updatedAt, total' },
    ]);
  });

  it('qty: 1e309 is one error, not two', async () => {
    const problem = await expectProblem(
      await send('POST', '/v1/orders', alice, '{"items":[{"productId":1,"qty":1e309}]}'),
      422,
      'validation',
    );
    assert.deepEqual(problem.errors, [{ pointer: '/items/0/qty', detail: 'must be an integer from 1 to 1000' }]);
    assert.equal(problem.detail, 'The request body is invalid at /items/0/qty.');
  });

  it('a body with 200 errors: 20 listed, and the detail names only those and says how many more', async () => {
    const items = JSON.stringify({ items: Array.from({ length: 100 }, () => ({ productId: 0, qty: 0 })) });
    const problem = await expectProblem(await send('POST', '/v1/orders', alice, items), 422, 'validation');
    const pointers = Array.from({ length: 10 }, (_, i) => [`/items/${i}/productId`, `/items/${i}/qty`]).flat();
    assert.deepEqual(
      problem.errors.map((e: { pointer: string }) => e.pointer),
      pointers,
    );
    assert.equal(
      problem.detail,
      `The request body is invalid at ${pointers.join(', ')}. 180 more errors are not listed.`,
    );
  });
});

describe('a request body with a Content-Encoding (contract §4, RFC 7694)', () => {
  const plain = '{"items":[{"productId":1,"qty":1}]}';
  for (const route of routes) {
    describe(route.name, () => {
      for (const coding of ['gzip', 'x-unknown', 'identity, gzip']) {
        it(`refuses Content-Encoding: ${coding} with 415 and Accept-Encoding: identity, and runs nothing`, async () => {
          const before = await countOrders();
          const response = await send(route.method, route.path(), route.who(), plain, {
            ...route.headers?.(),
            'content-encoding': coding,
            'idempotency-key': randomUUID(),
          });
          const body = await expectProblem(response, 415, 'unsupported-media-type');
          assert.equal(response.headers.get('accept-encoding'), 'identity');
          assert.match(body.detail, new RegExp(`Content-Encoding ${coding}\\. Send it uncompressed\\.$`));
          assert.equal(await countOrders(), before);
        });
      }
    });
  }

  it('refuses a real gzip body with 415, not 400 malformed-json', async () => {
    const response = await t.fetch('/v1/orders', {
      method: 'POST',
      headers: { ...bearer(alice.token), 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gzipSync(plain),
    });
    await expectProblem(response, 415, 'unsupported-media-type');
  });

  it('takes Content-Encoding: identity as no coding at all', async () => {
    const response = await send('POST', '/v1/orders', alice, plain, { 'content-encoding': 'identity' });
    assert.equal(response.status, 201);
  });
});

/** Orders in the database, whoever's. */
async function countOrders(): Promise<number> {
  const [row] = await t.server.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM orders`;
  return row?.n ?? 0;
}
