/**
 * Failed authentication costs the guesser, never the honest (contract §10):
 * a token with a wrong tag, or no token of ours, is refused without a lookup
 * and not counted, so no flood of them bars an address; a guess the service
 * cannot vouch for (a token of the shape made before tags, unknown lately) is
 * looked up and counted, and past the limit such guesses from that address
 * are answered 429 before any lookup; a tagged token, or one made before tags
 * and validated lately, is never refused for what others did from its
 * address. A wrong METRICS_TOKEN counts too; its right value always passes.
 * A request with no credential is not a guess; another address goes on.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { tokenHash } from '../../src/auth/tokens.ts';
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
    const opt = inner.opt.bind(inner);
    inner.opt = ((name: 'FindActiveToken', params: [Uint8Array]) => {
      if (name === 'FindActiveToken') lookups += 1;
      return opt(name, params);
    }) as typeof inner.opt;
    return inner;
  }) as typeof db.handle;
});
after(async () => {
  await t.close();
});

/** A token of the shape made before tags (no tag to check): only a lookup tells it is unknown. */
const guess = () => `ord_${randomBytes(32).toString('base64url')}`;
/** A token of the tagged shape with a tag nobody made: refused without a lookup. */
const forged = () => `ord_${randomBytes(40).toString('base64url').slice(0, 54)}`;

/** GET `path` with `token` on a connection from `address` (any of 127.0.0.0/8 on Linux). */
const from = (address: string, path: string, token: string) =>
  rawRequest(`${t.url}${path}`, { localAddress: address, headers: bearer(token) });

/** A token of `user` of the shape made before tags, stored as the service stored them. */
async function untaggedToken(user: Account): Promise<string> {
  const token = guess();
  await t.server.db.one('InsertToken', [user.id, tokenHash(token), ['orders:read'], null]);
  return token;
}

describe('failed authentication per client address', () => {
  it('counts the guesses it must look up, and past the limit refuses them with 429 before any lookup', async () => {
    const address = '127.0.0.3';
    const statuses: number[] = [];
    const remaining: (string | null)[] = [];
    const before = lookups;
    for (let i = 0; i <= LIMIT; i++) {
      const response = await from(address, '/v1/orders', guess());
      statuses.push(response.status);
      remaining.push((response.headers.ratelimit as string | undefined) ?? null);
    }
    // Each guess was looked up, refused and counted (the RateLimit fields report the failures' window); the one
    // past the limit is answered 429, as every such guess after it will be.
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429]);
    assert.deepEqual(
      remaining.map((field) => /r=(\d+)/.exec(field ?? '')?.[1]),
      ['4', '3', '2', '1', '0', '0'],
    );
    assert.equal(lookups - before, LIMIT + 1);
    const barred = lookups;
    const wrong = await from(address, '/v1/orders', guess());
    assert.equal(wrong.status, 429);
    assert.equal(JSON.parse(wrong.text).type, '/problems/rate-limited');
    assert.match(String(wrong.headers['retry-after']), /^[1-9][0-9]*$/);
    assert.equal(lookups, barred, 'no guess was looked up past the limit');
    // The honest on the same address: a tagged token is looked up and served; a forged or malformed one is 401.
    assert.equal((await from(address, '/v1/orders', alice.token)).status, 200);
    assert.equal((await from(address, '/v1/orders', forged())).status, 401);
    assert.equal((await from(address, '/v1/orders', 'x')).status, 401);
    // No credential is no guess: the route's own answer.
    const none = await rawRequest(`${t.url}/v1/orders`, { localAddress: address });
    assert.equal(none.status, 401);
  });

  it('never bars an address for forged or malformed tokens: no lookup, no count, the honest served', async () => {
    const address = '127.0.0.4';
    const before = lookups;
    const statuses = new Set<number>();
    for (let i = 0; i < 4 * LIMIT; i++) {
      statuses.add((await from(address, '/v1/orders', i % 2 === 0 ? forged() : 'not-a-token')).status);
    }
    // 401 each, until the address's own request limit (its anonymous window, RATE_LIMIT) answers 429: the guesser
    // spends its budget, no one else's.
    assert.deepEqual([...statuses].sort(), [401, 429]);
    assert.equal(lookups, before, 'no lookup for a token that cannot be ours');
    assert.equal((await from(address, '/v1/orders', alice.token)).status, 200);
  });

  it('serves a token made before tags that was validated lately, whatever others did from its address', async () => {
    const address = '127.0.0.7';
    const known = await untaggedToken(alice);
    const unseen = await untaggedToken(alice);
    assert.equal((await from(address, '/v1/orders', known)).status, 200);
    for (let i = 0; i <= LIMIT; i++) await from(address, '/v1/orders', guess());
    assert.equal((await from(address, '/v1/orders', guess())).status, 429);
    // Validated lately: vouched for, looked up (a revocation holds), served.
    assert.equal((await from(address, '/v1/orders', known)).status, 200);
    // Never validated from anywhere: a guess like any other, until the window ends (docs: issue tagged tokens).
    assert.equal((await from(address, '/v1/orders', unseen)).status, 429);
    assert.equal((await from('127.0.0.8', '/v1/orders', unseen)).status, 200);
  });

  it('counts wrong METRICS_TOKENs as failures of their address, and never looks up a token for them', async () => {
    const address = '127.0.0.5';
    const before = lookups;
    const statuses: number[] = [];
    for (let i = 0; i <= LIMIT + 1; i++) {
      statuses.push((await from(address, '/metrics', 'wrong-metrics-token-00')).status);
    }
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429]);
    // Its right value is checked first, and passes whatever the address did.
    assert.equal((await from(address, '/metrics', METRICS_TOKEN)).status, 200);
    // Another address is not barred.
    assert.equal((await from('127.0.0.6', '/metrics', METRICS_TOKEN)).status, 200);
    assert.equal(lookups, before);
  });
});
