import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HttpError, internalError, PROBLEM_TITLES, problemResponse, unavailableError } from '../src/http/problem.ts';

describe('problemResponse()', () => {
  it('renders an RFC 9457 body with type, title, status, detail, instance and requestId', async () => {
    const response = problemResponse(new HttpError(404, 'not-found', { detail: 'There is no order 7.' }), '/v1/orders/7', 'req-1');
    assert.equal(response.status, 404);
    assert.equal(response.headers.get('content-type'), 'application/problem+json');
    assert.equal(response.headers.get('cache-control'), 'no-store');
    assert.equal(await response.text(),
      '{"type":"/problems/not-found","title":"Resource not found","status":404,"detail":"There is no order 7.","instance":"/v1/orders/7","requestId":"req-1"}');
  });

  it('carries the errors list and extra headers', async () => {
    const response = problemResponse(
      new HttpError(400, 'invalid-query', { detail: 'bad', errors: [{ parameter: 'sort', detail: 'unknown key' }], headers: { 'retry-after': '3' } }),
      '/products', 'r');
    assert.equal(response.headers.get('retry-after'), '3');
    assert.deepEqual((await response.json()).errors, [{ parameter: 'sort', detail: 'unknown key' }]);
  });

  it('never lets a handler header override the problem content type or cache policy', () => {
    const response = problemResponse(new HttpError(409, 'invalid-transition', { headers: { 'content-type': 'text/html', 'cache-control': 'max-age=60' } }), '/x', 'r');
    assert.equal(response.headers.get('content-type'), 'application/problem+json');
    assert.equal(response.headers.get('cache-control'), 'no-store');
  });

  it('omits detail when none is given', async () => {
    const body = await problemResponse(new HttpError(405, 'method-not-allowed'), '/x', 'r').json();
    assert.equal('detail' in body, false);
    assert.equal(body.title, 'Method not allowed');
  });

  it('has a title for every slug of SPEC §5', () => {
    const slugs = ['malformed-json', 'invalid-query', 'invalid-header', 'idempotency-key-missing', 'unauthorized', 'forbidden', 'not-found',
      'method-not-allowed', 'not-acceptable', 'invalid-transition', 'order-not-editable', 'order-has-payments', 'order-not-payable',
      'idempotency-key-in-use', 'version-sunset', 'precondition-failed', 'payload-too-large', 'unsupported-media-type', 'validation',
      'idempotency-key-mismatch', 'rate-limited', 'internal', 'unavailable'];
    for (const slug of slugs) assert.ok(slug in PROBLEM_TITLES, slug);
  });
});

describe('internalError()', () => {
  it('says nothing of the cause', async () => {
    const body = await problemResponse(internalError(), '/x', 'abc').json();
    assert.deepEqual(Object.keys(body), ['type', 'title', 'status', 'detail', 'instance', 'requestId']);
    assert.equal(body.status, 500);
    assert.equal(body.type, '/problems/internal');
  });
});

describe('unavailableError()', () => {
  it('is a 503 with Retry-After', () => {
    const response = problemResponse(unavailableError(), '/x', 'abc');
    assert.equal(response.status, 503);
    assert.equal(response.headers.get('retry-after'), '5');
  });
});
