/**
 * The HTTP layer end to end: health, routing answers (404, 405, OPTIONS,
 * HEAD), body limits, request ids and log lines, on the real server.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { rawRequest } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let t: TestServer;
before(async () => {
  t = await startTestServer({ MAX_BODY_BYTES: '1024' });
});
after(async () => {
  await t.close();
});

async function problem(response: Response) {
  assert.equal(response.headers.get('content-type'), 'application/problem+json');
  assert.equal(response.headers.get('cache-control'), 'no-store');
  return (await response.json()) as Record<string, unknown>;
}

describe('GET /healthz and /readyz', () => {
  it('answers 200 {"status":"ok"} while the process runs', async () => {
    const response = await t.fetch('/healthz');
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'application/json');
    assert.deepEqual(await response.json(), { status: 'ok' });
  });

  it('answers 200 when the database answers', async () => {
    const response = await t.fetch('/readyz');
    assert.equal(response.status, 200);
    // A run with a read replica (DATABASE_READ_URL) says its state too; test/db/replica.test.ts checks it.
    const { replica, ...body } = (await response.json()) as { replica?: unknown };
    assert.deepEqual(body, { status: 'ready' });
    assert.equal(replica === undefined, t.database.readUrl === undefined);
  });

  it('takes no version prefix', async () => {
    assert.equal((await t.fetch('/v1/healthz')).status, 404);
    assert.equal((await t.fetch('/v2/readyz')).status, 404);
  });
});

describe('routing', () => {
  it('answers an unknown path with 404 not-found', async () => {
    const response = await t.fetch('/v1/nothing-here?x=1');
    assert.equal(response.status, 404);
    const body = await problem(response);
    assert.equal(body.type, '/problems/not-found');
    assert.equal(body.instance, '/v1/nothing-here');
  });

  it('answers a known path with another method with 405 and Allow', async () => {
    const response = await t.fetch('/v1/products', { method: 'DELETE' });
    assert.equal(response.status, 405);
    assert.equal(response.headers.get('allow'), 'GET, HEAD, OPTIONS');
    const body = await problem(response);
    assert.equal(body.type, '/problems/method-not-allowed');
    assert.equal(body.status, 405);
  });

  it('answers OPTIONS on a known path with 204 and Allow, without a token', async () => {
    const response = await t.fetch('/v2/users/1', { method: 'OPTIONS' });
    assert.equal(response.status, 204);
    assert.equal(response.headers.get('allow'), 'GET, HEAD, OPTIONS');
    assert.equal(await response.text(), '');
  });

  it('names the patch formats on OPTIONS where PATCH is allowed (RFC 5789)', async () => {
    const response = await t.fetch('/v1/orders/1', { method: 'OPTIONS' });
    assert.equal(response.headers.get('allow'), 'GET, HEAD, PUT, PATCH, DELETE, OPTIONS');
    assert.equal(response.headers.get('accept-patch'), 'application/json, application/merge-patch+json');
  });

  it('answers OPTIONS on an unknown path with 404', async () => {
    assert.equal((await t.fetch('/v1/nope', { method: 'OPTIONS' })).status, 404);
  });

  it('answers HEAD like GET, without the body', async () => {
    const get = await t.fetch('/v1/products/1');
    const head = await t.fetch('/v1/products/1', { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-type'), get.headers.get('content-type'));
    assert.equal(head.headers.get('content-length'), get.headers.get('content-length'));
    assert.equal(await head.text(), '');
  });

  it('answers an id that is not a positive integer with 404', async () => {
    for (const id of ['0', '-3', 'abc', '1.0', '9007199254740992']) {
      assert.equal((await t.fetch(`/v1/products/${id}`)).status, 404, id);
    }
  });

  it('serves an absolute-form request target by its path, whatever host it names (RFC 9112 §3.2.2)', async () => {
    const { status } = await rawRequest(t.url, { path: 'http://evil.example/v1/products' });
    assert.equal(status, 200);
  });
});

describe('request bodies (contract §11)', () => {
  let token = '';
  before(async () => {
    token = (await t.user('customer')).token;
  });
  const post = (
    path: string,
    body: string | ReadableStream<Uint8Array>,
    headers: Record<string, string> = {},
    init: RequestInit = {},
  ) => t.fetch(path, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers }, ...init });

  it('answers 413 at once for a Content-Length over the limit, once routed and authenticated', async () => {
    const response = await post('/v1/orders', 'x'.repeat(1025), { authorization: `Bearer ${token}` });
    assert.equal(response.status, 413);
    const body = await problem(response);
    assert.equal(body.type, '/problems/payload-too-large');
    assert.equal(body.detail, 'The request body must not exceed 1024 bytes.');
  });

  it('decides from the head first: 405 for a route that takes no body, 401 without a token, any size', async () => {
    assert.equal((await post('/v1/products', 'x'.repeat(1025))).status, 405);
    assert.equal((await post('/v1/orders', 'x'.repeat(1025))).status, 401);
  });

  it('answers 413 for a chunked body without Content-Length once it passes the limit', async () => {
    const chunks = [new Uint8Array(600), new Uint8Array(600), new Uint8Array(600)];
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = chunks.shift();
        if (next) controller.enqueue(next);
        else controller.close();
      },
    });
    const response = await post('/v1/orders', stream, { authorization: `Bearer ${token}` }, {
      duplex: 'half',
    } as RequestInit);
    assert.equal(response.status, 413);
    assert.equal((await problem(response)).type, '/problems/payload-too-large');
  });

  it('reads a body within the limit (here, 1,024 bytes that are not JSON: 400)', async () => {
    const response = await post('/v1/orders', 'x'.repeat(1024), { authorization: `Bearer ${token}` });
    assert.equal(response.status, 400);
    assert.equal((await problem(response)).type, '/problems/malformed-json');
  });

  it('keeps serving after a refused body', async () => {
    assert.equal((await t.fetch('/healthz')).status, 200);
  });
});

describe('X-Request-Id (contract §13)', () => {
  it('echoes a valid request id and puts it in the problem body and the log', async () => {
    const response = await t.fetch('/v1/missing', { headers: { 'x-request-id': 'abc-123' } });
    assert.equal(response.headers.get('x-request-id'), 'abc-123');
    assert.equal((await response.json()).requestId, 'abc-123');
    const line = t.logs.find((l) => l.requestId === 'abc-123');
    assert.ok(line);
    assert.equal(line.method, 'GET');
    assert.equal(line.path, '/v1/missing');
    assert.equal(line.status, 404);
    assert.equal(line.level, 'info');
    assert.equal(line.userId, null);
    assert.equal(typeof line.durationMs, 'number');
    assert.match(String(line.time), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it('generates one when the request has none', async () => {
    const response = await t.fetch('/healthz');
    assert.match(response.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  });

  it('replaces an invalid one (too long, or not visible ASCII)', async () => {
    for (const bad of ['x'.repeat(129), 'has space', 'tab\there']) {
      const response = await t.fetch('/healthz', { headers: { 'x-request-id': bad } });
      const id = response.headers.get('x-request-id') ?? '';
      assert.notEqual(id, bad);
      assert.match(id, /^[0-9a-f-]{36}$/);
    }
  });

  it('accepts 128 visible characters', async () => {
    const id = '~'.repeat(128);
    assert.equal((await t.fetch('/healthz', { headers: { 'x-request-id': id } })).headers.get('x-request-id'), id);
  });

  it('logs the path without the query string and never the token', async () => {
    await t.fetch('/v1/products?sort=-id&secret=me@example.com', {
      headers: { authorization: 'Bearer ord_secret_value', 'x-request-id': 'log-check' },
    });
    const line = t.logs.find((l) => l.requestId === 'log-check');
    assert.ok(line);
    assert.equal(line.path, '/v1/products');
    assert.ok(!JSON.stringify(t.logs).includes('me@example.com'));
    assert.ok(!JSON.stringify(t.logs).includes('ord_secret_value'));
  });
});
