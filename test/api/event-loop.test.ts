/**
 * contract §11: no request blocks the event loop for more than 50 ms, whatever
 * its 1 MiB body holds; sizes are checked before elements. The bodies of
 * issue 20 (349,000 empty items blocked POST /orders 5.2 s and PATCH 6.5 s)
 * and the other shapes a body can take at the size limit, sent to the routes
 * that read them, while the event loop's delay is measured in this process
 * (the server runs in it) and a second client polls /readyz.
 *
 * The delay is wall-clock time, which a loaded machine adds to when it
 * leaves this process off its cores (411 ms was seen beside another test
 * file), so the bound asserted is 350 ms times TIME_SLACK (test/support/time.ts;
 * 1.05 s by default, twenty times the contract's): it still catches the
 * seconds of before. /readyz's bound is 700 ms times TIME_SLACK. The figures of a quiet machine are in
 * docs/record/performance.md ("Hostile input and the event loop").
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { bearer, startTestServer, type Account, type TestServer } from '../support/server.ts';
import { slack } from '../support/time.ts';

const LIMIT = 1_048_576;
const items = (n: number) => `{"items":[${Array.from({ length: n }, () => '{}').join(',')}]}`;

/** Bodies of at most 1 MiB, by shape. */
const SHAPES: Record<string, string> = {
  '349,000 empty items': items(349_000),
  '80,000 members': `{${Array.from({ length: 80_000 }, (_, i) => `"k${i}":1`).join(',')}}`,
  'a 1 MiB string': `{"items":"${'x'.repeat(LIMIT - 20)}"}`,
  '1 MiB of nesting': '['.repeat(LIMIT - 10),
  '100 items of long strings': `{"items":[${Array.from({ length: 100 }, () => `"${'y'.repeat(10_000)}"`)}]}`,
};

let t: TestServer;
let admin: Account;
let alice: Account;
let orderId: number;

before(async () => {
  t = await startTestServer();
  admin = await t.user('admin');
  alice = await t.user('customer');
  const created = await t.fetch('/v1/orders', {
    method: 'POST',
    headers: { ...bearer(alice.token), 'content-type': 'application/json' },
    body: '{"items":[{"productId":1,"qty":1}]}',
  });
  orderId = (await created.json()).id;
});
after(async () => {
  await t.close();
});

describe('1 MiB bodies and the event loop (contract §11)', () => {
  it('never block it: every shape, on every route that reads a body, with /readyz polled meanwhile', async (test) => {
    const routes: [string, string, Account, Record<string, string>][] = [
      ['POST', '/v1/orders', alice, {}],
      ['POST', '/v1/orders', alice, { 'idempotency-key': '' }],
      ['PATCH', `/v1/orders/${orderId}`, alice, {}],
      ['PUT', `/v1/orders/${orderId}`, alice, {}],
      ['POST', '/v1/users', admin, {}],
      ['POST', '/v2/webhook-endpoints', admin, {}],
      ['POST', '/v1/payments', alice, { 'idempotency-key': '' }],
    ];
    const delay = monitorEventLoopDelay({ resolution: 5 });
    let polling = true;
    let slowestReady = 0;
    const poll = (async () => {
      while (polling) {
        const started = performance.now();
        assert.equal((await fetch(`${t.url}/readyz`)).status, 200);
        slowestReady = Math.max(slowestReady, performance.now() - started);
      }
    })();
    delay.enable();
    const statuses: string[] = [];
    try {
      for (const [shape, body] of Object.entries(SHAPES)) {
        assert.ok(body.length <= LIMIT, `${shape}: ${body.length} bytes`);
        for (const [method, path, who, extra] of routes) {
          const headers: Record<string, string> = { ...bearer(who.token), 'content-type': 'application/json' };
          if ('idempotency-key' in extra) headers['idempotency-key'] = randomUUID();
          const response = await fetch(`${t.url}${path}`, { method, headers, body });
          await response.arrayBuffer();
          statuses.push(`${response.status}`);
          // Refused, never run, never a 500.
          assert.ok(
            response.status === 400 || response.status === 422,
            `${shape}, ${method} ${path}: ${response.status}`,
          );
        }
      }
    } finally {
      delay.disable();
      polling = false;
      await poll;
    }
    const longest = delay.max / 1e6;
    test.diagnostic(`longest event-loop delay ${longest.toFixed(1)} ms; slowest /readyz ${slowestReady.toFixed(1)} ms`);
    assert.ok(longest < slack(350), `the event loop was blocked ${longest.toFixed(1)} ms`);
    assert.ok(slowestReady < slack(700), `/readyz took ${slowestReady.toFixed(1)} ms`);
    assert.equal(statuses.length, Object.keys(SHAPES).length * routes.length);
  });
});
