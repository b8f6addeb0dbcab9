/**
 * Failed authentication counted per client address (contract §10): past the
 * limit, an address's next credentials (a token, or METRICS_TOKEN) are
 * answered 429 before anything is looked up, right ones too, so guessing
 * gains nothing and runs no statement; a request with no credential is not a
 * guess; another address, and the same address's window once it ends, go on.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Param } from '../../src/db/database.ts';
import { rawRequest } from '../support/http.ts';
import { bearer, startTestServer, type Account, type TestServer } from '../support/server.ts';

const LIMIT = 5;
const METRICS_TOKEN = 'scrape-token-0123456789';

let t: TestServer;
let alice: Account;
/** The token lookups the server ran (FindActiveToken), counted around its database handle. */
let lookups = 0;

before(async () => {
  t = await startTestServer({ RATE_LIMIT: `${LIMIT}/60`, METRICS_TOKEN });
  alice = await t.user('customer');
  // The authenticator looks a token up on a handle of the request's (its statements cancel with the request's).
  const db = t.server.db;
  const handle = db.handle.bind(db);
  db.handle = ((scope) => {
    const inner = handle(scope);
    const one = inner.one.bind(inner);
    inner.one = (<T>(name: string, params?: readonly Param[]) => {
      if (name === 'FindActiveToken') lookups += 1;
      return one<T>(name, params);
    }) as typeof inner.one;
    return inner;
  }) as typeof db.handle;
});
after(async () => {
  await t.close();
});

/** A well-formed token that no one holds. */
const guess = () => `ord_${randomBytes(32).toString('base64url')}`;

/** GET `path` with `token` on a connection from `address` (any of 127.0.0.0/8 on Linux). */
const from = (address: string, path: string, token: string) =>
  rawRequest(`${t.url}${path}`, { localAddress: address, headers: bearer(token) });

describe('failed authentication per client address', () => {
  it('refuses an address past its failures with 429 before any lookup, a right token too', async () => {
    const statuses: number[] = [];
    const remaining: (string | null)[] = [];
    const before = lookups;
    for (let i = 0; i <= LIMIT; i++) {
      const response = await t.fetch('/v1/orders', { headers: bearer(guess()) });
      statuses.push(response.status);
      remaining.push(response.headers.get('ratelimit'));
      await response.arrayBuffer();
    }
    // Each guess was looked up, refused and counted (the RateLimit fields report the failures' window); the one
    // past the limit is answered 429, as every credential after it will be.
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429]);
    assert.deepEqual(
      remaining.map((field) => /r=(\d+)/.exec(field ?? '')?.[1]),
      ['4', '3', '2', '1', '0', '0'],
    );
    assert.equal(lookups - before, LIMIT + 1);
    const barred = lookups;
    const wrong = await t.fetch('/v1/orders', { headers: bearer(guess()) });
    const right = await t.fetch('/v1/orders', { headers: bearer(alice.token) });
    const malformed = await t.fetch('/v1/orders', { headers: { authorization: 'Bearer x' } });
    for (const response of [wrong, right, malformed]) {
      assert.equal(response.status, 429);
      assert.equal(response.headers.get('content-type'), 'application/problem+json');
      assert.match(response.headers.get('retry-after') ?? '', /^[1-9][0-9]*$/);
      assert.match(response.headers.get('ratelimit') ?? '', /^"default";r=0;t=[1-9][0-9]*$/);
      assert.equal(((await response.json()) as { type: string }).type, '/problems/rate-limited');
    }
    assert.equal(lookups, barred, 'no token was looked up past the limit');
    // METRICS_TOKEN is a credential like any: its right value is refused too, unchecked.
    const scrape = await t.fetch('/metrics', { headers: bearer(METRICS_TOKEN) });
    assert.equal(scrape.status, 429);
    await scrape.arrayBuffer();
    // No credential is no guess: the route's own answer.
    const none = await t.fetch('/v1/orders');
    assert.equal(none.status, 401);
    await none.arrayBuffer();
  });

  it('counts wrong METRICS_TOKENs as failures of their address, and never looks up a token for them', async () => {
    const address = '127.0.0.5';
    const before = lookups;
    const statuses: number[] = [];
    for (let i = 0; i <= LIMIT + 1; i++) {
      statuses.push((await from(address, '/metrics', 'wrong-metrics-token-00')).status);
    }
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429]);
    assert.equal((await from(address, '/metrics', METRICS_TOKEN)).status, 429);
    // Another address is not barred.
    assert.equal((await from('127.0.0.6', '/metrics', METRICS_TOKEN)).status, 200);
    assert.equal(lookups, before);
  });
});
