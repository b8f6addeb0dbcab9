/**
 * HTTP semantics over the real server (contract §8, §9, §10): negotiation and
 * versions, deprecation, ETags and conditional requests, caching headers
 * checked with a real HTTP cache implementation, and rate-limit fields.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import CachePolicy from 'http-cache-semantics';
import { bearer, startTestServer, type Account, type TestServer } from '../support/server.ts';
import { REAL_SERVER_URL } from '../support/database.ts';

const V1 = 'application/vnd.orders.v1+json';
const V2 = 'application/vnd.orders.v2+json';

let t: TestServer;
let alice: Account;
let orderId: number;

before(async () => {
  t = await startTestServer({
    CACHE_MAX_AGE: '30',
    V1_DEPRECATED_AT: '2026-12-01T00:00:00Z',
    V1_SUNSET_AT: '2099-06-01T00:00:00Z',
  });
  alice = await t.user('customer');
  const response = await t.fetch('/v1/orders', {
    method: 'POST',
    headers: { ...bearer(alice.token), 'content-type': 'application/json' },
    body: '{"items":[{"productId":1,"qty":2}]}',
  });
  orderId = (await response.json()).id;
});
after(async () => {
  await t.close();
});

const get = (path: string, headers: Record<string, string> = {}, who: Account | undefined = alice) =>
  t.fetch(path, { headers: { ...(who ? bearer(who.token) : {}), ...headers } });

describe('content negotiation and versions (contract §8)', () => {
  it('serves an unversioned path as v1 JSON with neither placement', async () => {
    const response = await get(`/orders/${orderId}`);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'application/json');
    assert.equal(typeof (await response.json()).total, 'number');
  });

  it('serves v2 from the Accept vendor type on an unversioned path, in that type', async () => {
    const response = await get(`/orders/${orderId}`, { accept: V2 });
    assert.equal(response.headers.get('content-type'), V2);
    assert.deepEqual((await response.json()).total, { amount: '25.00', currency: 'EUR' });
  });

  it('answers in the vendor type asked for on a versioned path', async () => {
    const response = await get(`/v1/orders/${orderId}`, { accept: V1 });
    assert.equal(response.headers.get('content-type'), V1);
  });

  it('answers 406 when the path and Accept disagree, or nothing is acceptable', async () => {
    for (const [path, accept] of [
      [`/v1/orders/${orderId}`, V2],
      [`/v2/orders/${orderId}`, V1],
      [`/orders/${orderId}`, 'text/html'],
      ['/v1/products', 'application/xml'],
      ['/products', 'nonsense'],
    ]) {
      const response = await get(path as string, { accept: accept as string });
      assert.equal(response.status, 406, `${path} ${accept}`);
      assert.equal(response.headers.get('content-type'), 'application/problem+json');
      assert.equal((await response.json()).type, '/problems/not-acceptable');
    }
  });

  it('says Vary: Accept, and Authorization where the answer depends on the caller', async () => {
    assert.equal((await get(`/v2/orders/${orderId}`)).headers.get('vary'), 'Accept, Authorization, Accept-Encoding');
    assert.equal((await get('/v2/products/1', {}, undefined)).headers.get('vary'), 'Accept, Accept-Encoding');
    // contract §16: every answer with a body, and every 304, varies by Accept-Encoding.
    assert.equal((await get('/healthz', {}, undefined)).headers.get('vary'), 'Accept-Encoding');
  });

  it('marks every v1 response as deprecated, with the sunset and the successor, and no v2 response', async () => {
    for (const [path, accept] of [
      [`/v1/orders/${orderId}`, undefined],
      [`/orders/${orderId}`, undefined],
      [`/orders/${orderId}`, V1],
      ['/v1/orders/99999999', undefined],
      ['/v1/nothing', undefined],
    ] as const) {
      const response = await get(path, accept ? { accept } : {});
      assert.equal(response.headers.get('deprecation'), '@1796083200', path);
      assert.equal(response.headers.get('sunset'), 'Mon, 01 Jun 2099 00:00:00 GMT', path);
      assert.ok(
        response.headers.get('link')?.endsWith(`</v2${path.replace(/^\/v1/, '')}>; rel="successor-version"`),
        `${path}: ${response.headers.get('link')}`,
      );
    }
    for (const [path, accept] of [
      [`/v2/orders/${orderId}`, undefined],
      [`/orders/${orderId}`, V2],
    ] as const) {
      const response = await get(path, accept ? { accept } : {});
      assert.equal(response.headers.get('deprecation'), null);
      assert.equal(response.headers.get('sunset'), null);
      assert.equal(response.headers.get('link'), null);
    }
  });

  it('refuses a body in the vendor type of the other version: 415', async () => {
    for (const [path, type] of [
      ['/v1/orders', V2],
      ['/v2/orders', V1],
    ]) {
      const response = await t.fetch(path as string, {
        method: 'POST',
        headers: { ...bearer(alice.token), 'content-type': type as string },
        body: '{"items":[{"productId":2,"qty":1}]}',
      });
      assert.equal(response.status, 415, path);
      assert.equal((await response.json()).type, '/problems/unsupported-media-type');
    }
  });

  it('takes the vendor types as request bodies', async () => {
    const response = await t.fetch('/orders', {
      method: 'POST',
      headers: { ...bearer(alice.token), 'content-type': V2, accept: V2 },
      body: '{"items":[{"productId":2,"qty":1}]}',
    });
    assert.equal(response.status, 201);
    assert.equal(response.headers.get('content-type'), V2);
    assert.deepEqual((await response.json()).total, { amount: '24.90', currency: 'EUR' });
  });
});

describe('after the sunset of v1', () => {
  let sunset: TestServer;
  before(async () => {
    sunset = await startTestServer({ V1_DEPRECATED_AT: '2020-01-01T00:00:00Z', V1_SUNSET_AT: '2021-01-01T00:00:00Z' });
  });
  after(async () => {
    await sunset.close();
  });

  it('answers v1 requests with 410 version-sunset pointing at v2', async () => {
    for (const [path, accept] of [
      ['/v1/products/1', undefined],
      ['/products/1', undefined],
      ['/products/1', V1],
    ] as const) {
      const response = await sunset.fetch(path, { headers: accept ? { accept } : {} });
      assert.equal(response.status, 410, path);
      const body = await response.json();
      assert.equal(body.type, '/problems/version-sunset');
      assert.equal(
        body.detail,
        'Version 1 of this API was retired on Fri, 01 Jan 2021 00:00:00 GMT; ' +
          'use version 2: /v2/products/1 (see docs/versioning.md).',
      );
      assert.equal(response.headers.get('link'), '</v2/products/1>; rel="successor-version"');
    }
  });

  it('still serves v2, by path or by Accept', async () => {
    assert.equal((await sunset.fetch('/v2/products/1')).status, 200);
    assert.equal((await sunset.fetch('/products/1', { headers: { accept: V2 } })).status, 200);
  });
});

describe('ETag and If-None-Match (contract §9)', () => {
  it('tags every 200 GET with a strong ETag, different per version', async () => {
    const v1 = await get(`/v1/orders/${orderId}`);
    const v2 = await get(`/v2/orders/${orderId}`);
    const t1 = v1.headers.get('etag');
    const t2 = v2.headers.get('etag');
    // An order's tag comes from its revision (test/api/order-revisions.test.ts); other resources' from their bytes.
    assert.match(t1 ?? '', /^"[\x21\x23-\x7e]+"$/);
    assert.notEqual(t1, t2);
    assert.match((await get('/v1/products/1', {}, undefined)).headers.get('etag') ?? '', /^"[A-Za-z0-9_-]{43}"$/);
    assert.match((await get('/v1/orders')).headers.get('etag') ?? '', /^"/);
    assert.match((await get('/healthz', {}, undefined)).headers.get('etag') ?? '', /^"/);
  });

  it('answers a matching If-None-Match with 304: ETag, Cache-Control, Vary, no body', async () => {
    const first = await get(`/v1/orders/${orderId}`);
    const etag = first.headers.get('etag') as string;
    for (const condition of [etag, `"nope", ${etag}`, `W/${etag}`, '*']) {
      const response = await get(`/v1/orders/${orderId}`, { 'if-none-match': condition });
      assert.equal(response.status, 304, condition);
      assert.equal(response.headers.get('etag'), etag);
      assert.equal(response.headers.get('cache-control'), 'private, max-age=30');
      assert.equal(response.headers.get('vary'), 'Accept, Authorization, Accept-Encoding');
      assert.equal(response.headers.get('content-type'), null);
      assert.equal(await response.text(), '');
    }
  });

  it('answers a HEAD with If-None-Match like the GET', async () => {
    const etag = (await get('/v1/products/2', {}, undefined)).headers.get('etag') as string;
    const response = await t.fetch('/v1/products/2', { method: 'HEAD', headers: { 'if-none-match': etag } });
    assert.equal(response.status, 304);
  });

  it('answers a tag of another version or an old state with 200', async () => {
    const v2tag = (await get(`/v2/orders/${orderId}`)).headers.get('etag') as string;
    assert.equal((await get(`/v1/orders/${orderId}`, { 'if-none-match': v2tag })).status, 200);
  });

  it('never answers 304 for a representation that changed', async () => {
    const before = await get(`/v1/orders/${orderId}`);
    const etag = before.headers.get('etag') as string;
    const patched = await t.fetch(`/v1/orders/${orderId}`, {
      method: 'PATCH',
      headers: { ...bearer(alice.token), 'content-type': 'application/json' },
      body: '{"items":[{"productId":1,"qty":3}]}',
    });
    assert.equal(patched.status, 200);
    const after = await get(`/v1/orders/${orderId}`, { 'if-none-match': etag });
    assert.equal(after.status, 200);
    assert.notEqual(after.headers.get('etag'), etag);
    assert.equal(after.headers.get('etag'), patched.headers.get('etag'));
  });

  it('never answers 304 after another server process on the same database changed it', {
    skip: !REAL_SERVER_URL ? 'needs a real PostgreSQL server (the embedded one serves one process)' : false,
  }, async () => {
    const other = await startTestServer({}, t.database);
    try {
      const etag = (await get(`/v1/orders/${orderId}`)).headers.get('etag') as string;
      const changed = await other.fetch(`/v1/orders/${orderId}`, {
        method: 'PATCH',
        headers: { ...bearer(alice.token), 'content-type': 'application/json' },
        body: '{"items":[{"productId":1,"qty":5}]}',
      });
      assert.equal(changed.status, 200);
      const after = await get(`/v1/orders/${orderId}`, { 'if-none-match': etag });
      assert.equal(after.status, 200);
      assert.equal(after.headers.get('etag'), changed.headers.get('etag'));
    } finally {
      await other.close();
    }
  });

  it('answers a malformed If-None-Match with 400 invalid-header', async () => {
    const response = await get(`/v1/orders/${orderId}`, { 'if-none-match': 'not-a-tag' });
    assert.equal(response.status, 400);
    assert.equal((await response.json()).type, '/problems/invalid-header');
  });

  it('answers a malformed If-None-Match with 400 before any handler, on every route, found or not', async () => {
    for (const path of [
      '/v1/orders?status=pending',
      '/v1/orders/999999999',
      `/v1/users/${alice.id}/orders`,
      '/v1/products/999999',
      '/v1/products',
      '/v1/users/999999',
      '/healthz',
    ]) {
      const response = await get(path, { 'if-none-match': 'not-a-tag' });
      assert.equal(response.status, 400, path);
      assert.deepEqual(
        [(await response.json()).type, response.headers.get('etag')],
        ['/problems/invalid-header', null],
        path,
      );
    }
  });

  it('answers HEAD on every GET route with the GET status and headers, no body', async () => {
    for (const path of [
      '/v1/orders',
      `/v1/orders/${orderId}`,
      `/v1/users/${alice.id}/orders`,
      `/v1/order-items?orderId=${orderId}`,
      '/v1/users',
      `/v1/users/${alice.id}`,
      '/v1/products',
      '/v1/products/1',
      '/healthz',
      '/readyz',
    ]) {
      const getResponse = await get(path);
      const head = await t.fetch(path, { method: 'HEAD', headers: bearer(alice.token) });
      assert.equal(head.status, getResponse.status, path);
      for (const name of ['content-type', 'content-length', 'etag', 'cache-control', 'vary']) {
        assert.equal(head.headers.get(name), getResponse.headers.get(name), `${path} ${name}`);
      }
      assert.equal(await head.text(), '', path);
    }
  });
});

describe('every GET route, in both versions', () => {
  const routes = (): [string, string][] => [
    ['/orders', 'private, max-age=30'],
    [`/orders/${orderId}`, 'private, max-age=30'],
    [`/users/${alice.id}/orders`, 'private, max-age=30'],
    [`/order-items?orderId=${orderId}`, 'private, max-age=30'],
    ['/users', 'no-store'],
    [`/users/${alice.id}`, 'no-store'],
    ['/products', 'public, max-age=30'],
    ['/products/1', 'public, max-age=30'],
  ];
  for (const version of ['v1', 'v2']) {
    it(`${version}: ETag, Cache-Control, Vary, and 304 on its own tag`, async () => {
      for (const [path, cacheControl] of routes()) {
        const response = await get(`/${version}${path}`);
        assert.equal(response.status, 200, path);
        assert.equal(response.headers.get('cache-control'), cacheControl, path);
        assert.match(response.headers.get('vary') ?? '', /^Accept/, path);
        assert.equal(response.headers.get('deprecation') !== null, version === 'v1', path);
        const etag = response.headers.get('etag') as string;
        const revalidated = await get(`/${version}${path}`, { 'if-none-match': etag });
        assert.equal(revalidated.status, 304, path);
        assert.equal(revalidated.headers.get('cache-control'), cacheControl, path);
      }
    });
  }
});

describe('If-Match on order writes (contract §9)', () => {
  const patch = (id: number, ifMatch: string, body = '{"items":[{"productId":1,"qty":4}]}', version = 'v1') =>
    t.fetch(`/${version}/orders/${id}`, {
      method: 'PATCH',
      headers: { ...bearer(alice.token), 'content-type': 'application/json', 'if-match': ifMatch },
      body,
    });

  it('writes when the tag matches and answers the new tag', async () => {
    const etag = (await get(`/v1/orders/${orderId}`)).headers.get('etag') as string;
    const response = await patch(orderId, etag);
    assert.equal(response.status, 200);
    assert.notEqual(response.headers.get('etag'), etag);
    assert.equal(response.headers.get('cache-control'), 'no-store');
  });

  it("answers 412 precondition-failed for a stale or weak tag, or another version's, and writes nothing", async () => {
    const current = await get(`/v1/orders/${orderId}`);
    const etag = current.headers.get('etag') as string;
    const v2tag = (await get(`/v2/orders/${orderId}`)).headers.get('etag') as string;
    for (const condition of ['"stale"', `W/${etag}`, v2tag]) {
      const response = await patch(orderId, condition, '{"items":[{"productId":1,"qty":9}]}');
      assert.equal(response.status, 412, condition);
      assert.equal((await response.json()).type, '/problems/precondition-failed');
    }
    assert.equal((await get(`/v1/orders/${orderId}`)).headers.get('etag'), etag);
  });

  it('matches any existing order with *, and checks PUT and DELETE too', async () => {
    const created = await (
      await t.fetch('/v2/orders', {
        method: 'POST',
        headers: { ...bearer(alice.token), 'content-type': 'application/json' },
        body: '{"items":[{"productId":3,"qty":1}]}',
      })
    ).json();
    assert.equal((await patch(created.id, '*', '{"status":"pending"}')).status, 200);
    const put = (ifMatch: string) =>
      t.fetch(`/v2/orders/${created.id}`, {
        method: 'PUT',
        headers: { ...bearer(alice.token), 'content-type': 'application/json', 'if-match': ifMatch },
        body: JSON.stringify({ customerId: alice.id, status: 'pending', items: [{ productId: 3, qty: 2 }] }),
      });
    assert.equal((await put('"old"')).status, 412);
    const tag = (await get(`/v2/orders/${created.id}`)).headers.get('etag') as string;
    assert.equal((await put(tag)).status, 200);
    const del = (ifMatch: string) =>
      t.fetch(`/v2/orders/${created.id}`, {
        method: 'DELETE',
        headers: { ...bearer(alice.token), 'if-match': ifMatch },
      });
    assert.equal((await del(tag)).status, 412, 'the PUT changed it');
    assert.equal((await del((await get(`/v2/orders/${created.id}`)).headers.get('etag') as string)).status, 204);
  });

  it('answers a malformed If-Match with 400 invalid-header', async () => {
    const response = await patch(orderId, 'nope');
    assert.equal(response.status, 400);
    assert.equal((await response.json()).type, '/problems/invalid-header');
  });

  it('lets exactly one of two concurrent writers with the same tag succeed', async () => {
    const etag = (await get(`/v1/orders/${orderId}`)).headers.get('etag') as string;
    const results = await Promise.all([
      patch(orderId, etag, '{"items":[{"productId":1,"qty":7}]}'),
      patch(orderId, etag, '{"items":[{"productId":1,"qty":8}]}'),
    ]);
    assert.deepEqual(results.map((r) => r.status).sort(), [200, 412]);
    const winner = results.find((r) => r.status === 200) as Response;
    const final = await (await get(`/v1/orders/${orderId}`)).json();
    assert.equal(final.items[0].qty, (await winner.json()).items[0].qty);
  });
});

describe('caching, as a real HTTP cache sees it (http-cache-semantics)', () => {
  async function policyOf(path: string, who: Account | undefined, shared: boolean) {
    const request = { url: path, method: 'GET', headers: who ? { authorization: `Bearer ${who.token}` } : {} };
    const response = await t.fetch(path, { headers: request.headers });
    const headers = Object.fromEntries(response.headers);
    return { policy: new CachePolicy(request, { status: response.status, headers }, { shared }), request, response };
  }

  it('stores orders in a private cache only, and revalidates them with If-None-Match', async () => {
    const shared = await policyOf(`/v1/orders/${orderId}`, alice, true);
    assert.equal(shared.policy.storable(), false);
    const { policy, request } = await policyOf(`/v1/orders/${orderId}`, alice, false);
    assert.equal(policy.storable(), true);
    assert.equal(policy.maxAge(), 30);
    const revalidation = policy.revalidationHeaders(request) as Record<string, string>;
    assert.ok(revalidation['if-none-match']);
    const again = await t.fetch(`/v1/orders/${orderId}`, { headers: revalidation });
    assert.equal(again.status, 304);
    const { modified } = policy.revalidatedPolicy(request, { status: 304, headers: Object.fromEntries(again.headers) });
    assert.equal(modified, false);
  });

  it('stores order lists and items privately too', async () => {
    for (const path of ['/v1/orders', `/v1/order-items?orderId=${orderId}`, `/v1/users/${alice.id}/orders`]) {
      assert.equal((await policyOf(path, alice, false)).policy.storable(), true, path);
      assert.equal((await policyOf(path, alice, true)).policy.storable(), false, path);
    }
  });

  it('never stores users', async () => {
    for (const path of ['/v1/users', `/v1/users/${alice.id}`]) {
      const { policy, response } = await policyOf(path, alice, false);
      assert.equal(response.headers.get('cache-control'), 'no-store');
      assert.equal(policy.storable(), false, path);
    }
  });

  it('lets shared caches store products for CACHE_MAX_AGE seconds', async () => {
    const { policy, response } = await policyOf('/v1/products/1', undefined, true);
    assert.equal(response.headers.get('cache-control'), 'public, max-age=30');
    assert.equal(policy.storable(), true);
    assert.equal(policy.maxAge(), 30);
  });

  it('never stores an error', async () => {
    const { policy, response } = await policyOf('/v1/products/999999', undefined, true);
    assert.equal(response.headers.get('cache-control'), 'no-store');
    assert.equal(policy.storable(), false);
  });
});

describe('rate limits (contract §10)', () => {
  let limited: TestServer;
  let user: Account;
  before(async () => {
    limited = await startTestServer({ RATE_LIMIT: '3/60' });
    user = await limited.user('customer');
  });
  after(async () => {
    await limited.close();
  });

  it('sends the policy and the remaining count on every response, then 429 with Retry-After', async () => {
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const response = await limited.fetch('/v1/orders', { headers: bearer(user.token) });
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('ratelimit-policy'), '"default";q=3;w=60');
      remaining.push(response.headers.get('ratelimit') ?? '');
    }
    assert.deepEqual(
      remaining.map((r) => r.replace(/;t=\d+$/, '')),
      ['"default";r=2', '"default";r=1', '"default";r=0'],
    );
    assert.match(remaining[0] ?? '', /;t=(60|59)$/);
    const refused = await limited.fetch('/v1/orders', { headers: bearer(user.token) });
    assert.equal(refused.status, 429);
    assert.match(refused.headers.get('retry-after') ?? '', /^[1-9][0-9]*$/);
    assert.equal(refused.headers.get('cache-control'), 'no-store');
    assert.equal((await refused.json()).type, '/problems/rate-limited');
  });

  it('counts users apart, and unauthenticated requests by client address', async () => {
    const other = await limited.user('customer');
    assert.equal((await limited.fetch('/v1/orders', { headers: bearer(other.token) })).status, 200);
    for (let i = 0; i < 3; i++) assert.equal((await limited.fetch('/v1/products/1')).status, 200);
    const refused = await limited.fetch('/v1/products/1');
    assert.equal(refused.status, 429);
    assert.equal((await limited.fetch('/v1/products/2')).status, 429, 'the address is over its limit everywhere');
    // contract §10: but the health checks, never limited.
    assert.equal((await limited.fetch('/healthz')).status, 200);
  });

  it('limits failed authentications (unknown tokens) by address, in a window of their own', async () => {
    const other = await startTestServer({ RATE_LIMIT: '2/60' });
    try {
      const guess = () => other.fetch('/v1/orders', { headers: { authorization: `Bearer ord_${'A'.repeat(43)}` } });
      assert.equal((await guess()).status, 401);
      assert.equal((await guess()).status, 401);
      const third = await guess();
      assert.equal(third.status, 429);
      assert.match(third.headers.get('ratelimit') ?? '', /^"default";r=0;t=\d+$/);
      // Failed authentications have a window of their own: the address's anonymous requests are not touched.
      assert.equal((await other.fetch('/v1/nope')).status, 404);
    } finally {
      await other.close();
    }
  });

  it('sends no rate-limit fields when RATE_LIMIT=off', async () => {
    const response = await get('/v1/products/1', {}, undefined);
    assert.equal(response.headers.get('ratelimit'), null);
    assert.equal(response.headers.get('ratelimit-policy'), null);
  });
});
