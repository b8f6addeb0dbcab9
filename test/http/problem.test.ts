import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  distinctErrors,
  HttpError,
  internalError,
  listedErrors,
  MAX_PROBLEM_ERRORS,
  PROBLEM_TITLES,
  problemResponse,
  unavailableError,
} from '../../src/http/problem.ts';

describe('problemResponse()', () => {
  it('renders an RFC 9457 body with type, title, status, detail, instance and requestId', async () => {
    const response = problemResponse(
      new HttpError(404, 'not-found', { detail: 'There is no order 7.' }),
      '/v1/orders/7',
      'req-1',
    );
    assert.equal(response.status, 404);
    assert.equal(response.headers.get('content-type'), 'application/problem+json');
    assert.equal(response.headers.get('cache-control'), 'no-store');
    assert.equal(
      await response.text(),
      '{"type":"/problems/not-found","title":"Resource not found","status":404,"detail":"There is no order 7.",' +
        '"instance":"/v1/orders/7","requestId":"req-1"}',
    );
  });

  it('carries the errors list and extra headers', async () => {
    const response = problemResponse(
      new HttpError(400, 'invalid-query', {
        detail: 'bad',
        errors: [{ parameter: 'sort', detail: 'unknown key' }],
        headers: { 'retry-after': '3' },
      }),
      '/products',
      'r',
    );
    assert.equal(response.headers.get('retry-after'), '3');
    assert.deepEqual((await response.json()).errors, [{ parameter: 'sort', detail: 'unknown key' }]);
  });

  it('never lets a handler header override the problem content type or cache policy', () => {
    const response = problemResponse(
      new HttpError(409, 'invalid-transition', {
        headers: { 'content-type': 'text/html', 'cache-control': 'max-age=60' },
      }),
      '/x',
      'r',
    );
    assert.equal(response.headers.get('content-type'), 'application/problem+json');
    assert.equal(response.headers.get('cache-control'), 'no-store');
  });

  it('omits detail when none is given', async () => {
    const body = await problemResponse(new HttpError(405, 'method-not-allowed'), '/x', 'r').json();
    assert.equal('detail' in body, false);
    assert.equal(body.title, 'Method not allowed');
  });

  it('has a title for every slug of contract §5', () => {
    const slugs = [
      'malformed-json',
      'invalid-query',
      'invalid-header',
      'idempotency-key-missing',
      'unauthorized',
      'forbidden',
      'not-found',
      'method-not-allowed',
      'not-acceptable',
      'invalid-transition',
      'order-not-editable',
      'order-has-payments',
      'order-not-payable',
      'idempotency-key-in-use',
      'version-sunset',
      'precondition-failed',
      'payload-too-large',
      'unsupported-media-type',
      'validation',
      'idempotency-key-mismatch',
      'rate-limited',
      'internal',
      'unavailable',
    ];
    for (const slug of slugs) assert.ok(slug in PROBLEM_TITLES, slug);
  });
});

describe('problemResponse() with a long errors list (contract §11)', () => {
  const unknown = (n: number) =>
    Array.from({ length: n }, (_, i) => ({ parameter: `x${i}`, detail: 'is not a parameter of this collection' }));

  it('lists the first 20 and says in the detail how many more there are', async () => {
    assert.equal(MAX_PROBLEM_ERRORS, 20);
    const response = problemResponse(
      new HttpError(400, 'invalid-query', { detail: 'The query is invalid.', errors: unknown(1000) }),
      '/v1/orders',
      'r',
    );
    const body = await response.json();
    assert.deepEqual(body.errors, unknown(20));
    assert.equal(body.detail, 'The query is invalid. 980 more errors are not listed.');
  });

  it('says "1 more error is" for one, and makes the sentence the detail when there is none', async () => {
    const body = await problemResponse(new HttpError(400, 'invalid-query', { errors: unknown(21) }), '/x', 'r').json();
    assert.equal(body.detail, '1 more error is not listed.');
    assert.equal(body.errors.length, 20);
  });

  it('leaves a list of exactly 20 and its detail as they are', async () => {
    const body = await problemResponse(
      new HttpError(400, 'invalid-query', { detail: 'd', errors: unknown(20) }),
      '/x',
      'r',
    ).json();
    assert.equal(body.detail, 'd');
    assert.deepEqual(body.errors, unknown(20));
  });

  it('lists an error given twice once, and counts only distinct ones as more', async () => {
    const qty = { pointer: '/items/0/qty', detail: 'must be an integer from 1 to 1000' };
    const body = await problemResponse(
      new HttpError(422, 'validation', { detail: 'd', errors: [qty, qty] }),
      '/x',
      'r',
    ).json();
    assert.deepEqual(body.errors, [qty]);
    assert.equal(body.detail, 'd');
    const doubled = await problemResponse(
      new HttpError(400, 'invalid-query', { detail: 'd', errors: [...unknown(25), ...unknown(25)] }),
      '/x',
      'r',
    ).json();
    assert.equal(doubled.detail, 'd 5 more errors are not listed.');
  });
});

describe('distinctErrors() and listedErrors()', () => {
  it('keep the first of equal entries, in order; a pointer and a parameter of one name differ', () => {
    const errors = [
      { pointer: '/a', detail: 'x' },
      { parameter: '/a', detail: 'x' },
      { pointer: '/a', detail: 'y' },
      { pointer: '/a', detail: 'x' },
    ];
    assert.deepEqual(distinctErrors(errors), errors.slice(0, 3));
    assert.deepEqual(listedErrors(errors), { listed: errors.slice(0, 3), omitted: 0 });
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
