/**
 * Each route's plan (src/pipeline/plan.ts), decided once from its spec: what
 * the stages read of it, for the service's own routes. The stages' use of it
 * is tested in test/api/pipeline-stages.test.ts and through the server.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planned, planOf } from '../../src/pipeline/plan.ts';
import { routes } from '../../src/service/routes.ts';

function planFor(method: string, pattern: string) {
  const spec = routes.find((r) => r.method === method && r.pattern === pattern);
  assert.ok(spec !== undefined, `${method} ${pattern} is a route`);
  return planOf(spec);
}

describe('a route plan', () => {
  it('of a read: no write, no key, its cache policy, the replica where the route allows it', () => {
    assert.deepEqual(planFor('GET', '/orders/{id:int}'), {
      writes: false,
      noContent: false,
      ifMatch: false,
      cache: 'private',
      idempotency: 'none',
      inSavepoint: true,
      replica: true,
    });
    assert.deepEqual(planFor('GET', '/products').cache, 'public');
    assert.equal(planFor('GET', '/events').replica, false);
  });

  it('of the writes: If-Match where taken, a key as §7 wants it, a 204 never refused for its Accept', () => {
    const patch = planFor('PATCH', '/orders/{id:int}');
    assert.deepEqual([patch.writes, patch.ifMatch, patch.idempotency, patch.cache], [true, true, 'none', 'no-store']);
    const remove = planFor('DELETE', '/orders/{id:int}');
    assert.deepEqual([remove.writes, remove.noContent, remove.ifMatch], [true, true, true]);
    assert.deepEqual(planFor('POST', '/orders').idempotency, 'optional');
    assert.deepEqual(planFor('POST', '/payments').idempotency, 'required');
    assert.equal(planFor('POST', '/orders').replica, false);
    // POST /orders refuses before its first write: a keyed one runs in the key's transaction, no savepoint.
    assert.deepEqual([planFor('POST', '/orders').inSavepoint, planFor('POST', '/payments').inSavepoint], [false, true]);
  });

  it('is frozen with its route, decided once', () => {
    const route = routes.find((r) => r.method === 'POST' && r.pattern === '/orders');
    assert.ok(route !== undefined);
    const served = planned(route);
    assert.equal(served.handler, route.handler);
    assert.ok(Object.isFrozen(served) && Object.isFrozen(served.plan));
    assert.deepEqual(served.plan, planOf(route));
  });
});
