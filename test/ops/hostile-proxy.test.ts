/**
 * The attacks of contract §10, §11 and §16 that need the deployed topology:
 * the built program (`dist/orders.mjs`) behind the real HAProxy, started with
 * the configuration docs/operations.md gives ("Behind a load balancer",
 * test/fixtures/haproxy.cfg.template; its time for a request head shortened
 * to 1 s here), the service with `TRUST_PROXY` naming HAProxy's address only.
 * Clients come from distinct loopback addresses.
 *
 * - A client cannot choose the address it is counted as: a forged
 *   `Forwarded` or `X-Forwarded-For` is removed, and the source written.
 * - Forged failures "for" a victim's address bar only the forger.
 * - Slowloris: one address's unfinished heads are held to its 64
 *   connections and closed after the time for a head; everyone else,
 *   `/healthz` included, is answered meanwhile.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { rawExchange, tally, type Target } from '../support/attacks.ts';
import { tokenOf } from '../support/accounts.ts';
import { createTestDatabase, TEST_PREPARE, type TestDatabase } from '../support/database.ts';
import { HAPROXY_MISSING, startHaproxy, type Haproxy } from '../support/haproxy.ts';
import { rawRequest } from '../support/http.ts';
import { startService, type ServiceProcess } from '../support/process.ts';

const PROGRAM = new URL('../../dist/orders.mjs', import.meta.url).pathname;
const LIMIT = 20;

let database: TestDatabase;
let service: ServiceProcess;
let balancer: Haproxy;
let customer: string;

before(async () => {
  if (HAPROXY_MISSING) return;
  database = await createTestDatabase();
  service = await startService(
    {
      DATABASE_URL: database.url,
      ...(TEST_PREPARE ? {} : { DB_PREPARE: 'off' }),
      RATE_LIMIT: `${LIMIT}/60`,
      // HAProxy's connections come from 127.0.0.1; the clients from other loopback addresses.
      TRUST_PROXY: '127.0.0.1',
    },
    undefined,
    undefined,
    [process.execPath, PROGRAM],
  );
  customer = await tokenOf('customer', database, service);
  balancer = await startHaproxy([service.url], [['timeout http-request 10s', 'timeout http-request 1s']]);
});
after(async () => {
  if (HAPROXY_MISSING) return;
  await balancer?.stop();
  if (service?.process.exitCode === null) {
    const exited = once(service.process, 'exit');
    service.process.kill('SIGTERM');
    await exited;
  }
  await database?.drop();
});

/** GET `path` through HAProxy from `address`, with `headers`. */
const get = (address: string, path: string, headers: Record<string, string> = {}) =>
  rawRequest(`${balancer.url}${path}`, { localAddress: address, headers });

describe('behind the documented HAProxy (contract §16)', { skip: HAPROXY_MISSING }, () => {
  it('a client cannot choose the address it is counted as: forged Forwarded and X-Forwarded-For go', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT + 5; i++) {
      const forged = { forwarded: `for=198.51.100.${i + 1}`, 'x-forwarded-for': `203.0.113.${i + 1}` };
      statuses.push((await get('127.0.0.21', '/v1/products', forged)).status);
    }
    // Counted as itself, whatever it wrote (before: 650 of 650 past a limit of 600 answered 200).
    assert.deepEqual(tally(statuses), { 200: LIMIT, 429: 5 });
    assert.equal((await get('127.0.0.22', '/v1/products')).status, 200);
  });

  it('forged failures "for" a victim bar the forger, never the victim', async () => {
    // Guesses the service must look up (the shape of a token made before tags), written "for" the victim.
    const statuses: number[] = [];
    for (let i = 0; i <= LIMIT; i++) {
      const headers = {
        authorization: `Bearer ord_${randomBytes(32).toString('base64url')}`,
        'x-forwarded-for': '127.0.0.24',
        forwarded: 'for=127.0.0.24',
      };
      statuses.push((await get('127.0.0.23', '/v1/orders', headers)).status);
    }
    assert.deepEqual(tally(statuses), { 401: LIMIT, 429: 1 });
    // The victim's valid token, and a guess of its own: not barred (before: 429 for 60 s, renewable).
    assert.equal((await get('127.0.0.24', '/v1/orders', { authorization: `Bearer ${customer}` })).status, 200);
    const own = await get('127.0.0.24', '/v1/orders', { authorization: `Bearer ord_${'B'.repeat(43)}` });
    assert.equal(own.status, 401);
  });

  it('slowloris: one address holds at most 64 unfinished heads, closed after 1 s; others are answered', async () => {
    const { hostname, port } = new URL(balancer.url);
    const attacker: Target = { host: hostname, port: Number(port), localAddress: '127.0.0.25' };
    // A head that never ends.
    const unfinished = 'GET /v1/products HTTP/1.1\r\nHost: orders\r\nX-Slow: 1\r\n';
    const held = Array.from({ length: 200 }, () => rawExchange(attacker, unfinished, [], 10_000));
    // Meanwhile another client: /healthz and the catalog, each answered.
    const others: number[] = [];
    for (let i = 0; i < 10; i++) {
      others.push((await get('127.0.0.26', i % 2 === 0 ? '/healthz' : '/v1/products')).status);
    }
    const outcomes = tally(await Promise.all(held));
    assert.deepEqual(others, Array(10).fill(200));
    // 64 taken and answered 408 once their head was late; the rest refused as they came (before: 4,100 held
    // kept every other client waiting 70 s).
    assert.deepEqual(outcomes, { 408: 64, closed: 136 });
  });
});
