/**
 * A store's refusal (src/base/domain-error.ts) as the problem it is answered
 * with (src/http/domain-problem.ts): status, type, detail and the places of a
 * validation refusal. Through the server, test/api/orders*.test.ts and the
 * payment tests see the same problems.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DomainError, invalidAt } from '../../src/base/domain-error.ts';
import { DOMAIN_STATUS, refusalOf } from '../../src/http/domain-problem.ts';
import { HttpError, problemResponse } from '../../src/http/problem.ts';

describe('refusalOf()', () => {
  it('answers each rule with its status, type and the detail the store gave', async () => {
    const error = new DomainError('order-not-payable', 'Order 7 is paid; only a pending order can be paid.');
    const refusal = refusalOf(error);
    assert.ok(refusal instanceof HttpError);
    assert.deepEqual(
      [refusal.status, refusal.slug, refusal.init.detail],
      [409, 'order-not-payable', 'Order 7 is paid; only a pending order can be paid.'],
    );
    const body = await problemResponse(refusal, '/v1/payments', 'r-1').json();
    assert.deepEqual(body, {
      type: '/problems/order-not-payable',
      title: 'Order cannot be paid',
      status: 409,
      detail: 'Order 7 is paid; only a pending order can be paid.',
      instance: '/v1/payments',
      requestId: 'r-1',
    });
    // Contract §5's statuses, written out here rather than read from the table under test.
    const rules = ['not-found', 'forbidden', 'invalid-transition', 'order-not-editable', 'order-has-payments'] as const;
    assert.deepEqual(
      rules.map((rule) => refusalOf(new DomainError(rule, 'x'))?.status),
      [404, 403, 409, 409, 409],
    );
    assert.deepEqual(Object.keys(DOMAIN_STATUS).sort(), [...rules, 'order-not-payable', 'validation'].sort());
  });

  it('answers a validation refusal with 422 and the places at fault, as a refused body is', async () => {
    const refusal = refusalOf(
      invalidAt(
        { pointer: '/items/1/productId', detail: 'there is no product 9' },
        { pointer: '/orderId', detail: 'x' },
      ),
    );
    assert.ok(refusal instanceof HttpError);
    assert.equal(refusal.status, 422);
    const body = await problemResponse(refusal, '/v1/orders', 'r-2').json();
    assert.equal(body.type, '/problems/validation');
    assert.equal(body.detail, 'The request body is invalid at /items/1/productId, /orderId.');
    assert.deepEqual(body.errors, [
      { pointer: '/items/1/productId', detail: 'there is no product 9' },
      { pointer: '/orderId', detail: 'x' },
    ]);
  });

  it('gives an HttpError as it is, and nothing for any other error', () => {
    const http = new HttpError(412, 'precondition-failed');
    assert.equal(refusalOf(http), http);
    assert.equal(refusalOf(new Error('boom')), undefined);
    assert.equal(refusalOf({ rule: 'not-found' }), undefined);
  });
});
