/** Authentication and authorization (contract §6) over HTTP, and the token cache. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createAuthenticator } from '../../src/auth/authenticator.ts';
import { createToken, revokeToken } from '../../src/auth/token-store.ts';
import type { Database, Db } from '../../src/db/database.ts';
import { RequestScope } from '../../src/db/cancellation.ts';
import { serviceKey } from '../../src/db/keys.ts';
import { HttpError } from '../../src/http/problem.ts';
import { bearer, startTestServer, type Account, type TestServer } from '../support/server.ts';

let t: TestServer;
let admin: Account;
let alice: Account;
let bob: Account;
before(async () => {
  t = await startTestServer();
  admin = await t.user('admin');
  alice = await t.user('customer');
  bob = await t.user('customer');
});
after(async () => {
  await t.close();
});

async function expectProblem(response: Response, status: number, type: string, wwwAuthenticate: string | null) {
  assert.equal(response.status, status);
  assert.equal(response.headers.get('www-authenticate'), wwwAuthenticate);
  assert.equal(response.headers.get('content-type'), 'application/problem+json');
  assert.equal(response.headers.get('cache-control'), 'no-store');
  assert.equal((await response.json()).type, type);
}

describe('401 unauthorized', () => {
  it('without a token: WWW-Authenticate: Bearer realm="orders"', async () => {
    await expectProblem(await t.fetch('/v1/users'), 401, '/problems/unauthorized', 'Bearer realm="orders"');
  });

  it('with another scheme: as without a token', async () => {
    await expectProblem(
      await t.fetch('/v1/users', { headers: { authorization: 'Basic YTpi' } }),
      401,
      '/problems/unauthorized',
      'Bearer realm="orders"',
    );
  });

  const invalid: [string, string][] = [
    ['an unknown token', `Bearer ord_${'A'.repeat(43)}`],
    ['a token of the wrong shape', 'Bearer not-a-token'],
    ['an empty Bearer', 'Bearer '],
    ['two tokens', 'Bearer ord_a ord_b'],
  ];
  for (const [what, header] of invalid) {
    it(`with ${what}: error="invalid_token"`, async () => {
      await expectProblem(
        await t.fetch('/v1/users', { headers: { authorization: header } }),
        401,
        '/problems/unauthorized',
        'Bearer realm="orders", error="invalid_token"',
      );
    });
  }

  it('with a revoked token: error="invalid_token"', async () => {
    const u = await t.user('customer');
    await revokeToken(t.server.db, u.tokenId);
    // The server's cache never saw this token, so the revocation shows at once.
    await expectProblem(
      await t.fetch('/v1/users', { headers: bearer(u.token) }),
      401,
      '/problems/unauthorized',
      'Bearer realm="orders", error="invalid_token"',
    );
  });

  it('with an expired token: error="invalid_token"', async () => {
    const u = await t.user('customer');
    await t.server.db.sql`UPDATE api_tokens
      SET created_at = now() - interval '2 days', expires_at = now() - interval '1 day' WHERE id = ${u.tokenId}`;
    await expectProblem(
      await t.fetch('/v1/users', { headers: bearer(u.token) }),
      401,
      '/problems/unauthorized',
      'Bearer realm="orders", error="invalid_token"',
    );
  });
});

describe('403 forbidden', () => {
  it('for a token without the scope: WWW-Authenticate names the scope', async () => {
    const u = await t.user('customer', ['orders:read']);
    const response = await t.fetch(`/v1/users/${u.id}`, { headers: bearer(u.token) });
    await expectProblem(response, 403, '/problems/forbidden', 'Bearer error="insufficient_scope", scope="users:read"');
  });
});

describe('public routes', () => {
  it('ignore a bad token on /products, /healthz and /readyz', async () => {
    for (const path of ['/v1/products', '/healthz', '/readyz']) {
      assert.equal((await t.fetch(path, { headers: { authorization: 'Bearer nonsense' } })).status, 200, path);
    }
  });
});

describe('GET /users and /users/{id}: ownership', () => {
  it('an admin sees every user', async () => {
    const body = await (await t.fetch('/v1/users?pageSize=100', { headers: bearer(admin.token) })).json();
    const ids = body.data.map((u: { id: number }) => u.id);
    for (const id of [1, 2, admin.id, alice.id, bob.id]) assert.ok(ids.includes(id), String(id));
    assert.equal(body.meta.total, ids.length);
  });

  it('a customer lists only their own record', async () => {
    const response = await t.fetch('/v1/users', { headers: bearer(alice.token) });
    assert.equal(response.status, 200);
    const body = await response.json();
    assert.deepEqual(
      body.data.map((u: { id: number }) => u.id),
      [alice.id],
    );
    assert.deepEqual(body.meta, { total: 1, page: 1, pageSize: 20, pageCount: 1 });
    assert.deepEqual(Object.keys(body.data[0]), ['id', 'email', 'name', 'role', 'createdAt']);
    assert.equal(body.data[0].role, 'customer');
  });

  it('a customer reads their own record', async () => {
    const response = await t.fetch(`/v2/users/${alice.id}`, { headers: bearer(alice.token) });
    assert.equal(response.status, 200);
    assert.equal((await response.json()).id, alice.id);
  });

  it("a customer gets 404 for another customer's record, as for a missing one", async () => {
    const other = await t.fetch(`/v1/users/${bob.id}`, { headers: bearer(alice.token) });
    const missing = await t.fetch('/v1/users/99999999', { headers: bearer(alice.token) });
    assert.equal(other.status, 404);
    assert.equal(missing.status, 404);
    const a = await other.json();
    const b = await missing.json();
    assert.equal(a.type, '/problems/not-found');
    assert.equal(a.title, b.title);
  });

  it('an admin reads any record and gets 404 for a missing one', async () => {
    assert.equal((await t.fetch(`/v1/users/${bob.id}`, { headers: bearer(admin.token) })).status, 200);
    assert.equal((await t.fetch('/v1/users/99999999', { headers: bearer(admin.token) })).status, 404);
  });

  it('logs the user id of an authenticated request', async () => {
    await t.fetch(`/v1/users/${alice.id}`, { headers: { ...bearer(alice.token), 'x-request-id': 'who-am-i' } });
    assert.equal(t.logs.find((l) => l.requestId === 'who-am-i')?.userId, alice.id);
  });

  it('validates the list query', async () => {
    const response = await t.fetch('/v1/users?role=admin', { headers: bearer(admin.token) });
    assert.equal(response.status, 400);
    assert.deepEqual((await response.json()).errors, [
      { parameter: 'role', detail: 'is not a parameter of this collection; use page, pageSize, sort, cursor' },
    ]);
  });
});

describe('createAuthenticator()', () => {
  it('stops accepting a revoked token once its cache entry expires (well within 5 s)', async () => {
    let now = 1_000_000;
    const authenticator = createAuthenticator(t.server.db, await serviceKey(t.server.db, 'token'), () => now);
    const { token, record } = await createToken(t.server.db, alice.id, ['orders:read'], null);
    assert.equal((await authenticator.authenticate(`Bearer ${token}`)).userId, alice.id);
    await revokeToken(t.server.db, record.id);
    now += 1_999;
    assert.equal((await authenticator.authenticate(`Bearer ${token}`)).userId, alice.id, 'still cached');
    now += 2;
    await assert.rejects(
      authenticator.authenticate(`Bearer ${token}`),
      (e: unknown) => e instanceof HttpError && e.status === 401,
    );
  });

  it('knows a token at once only while authenticate() would answer it from its cache', async () => {
    let now = 1_000_000;
    const authenticator = createAuthenticator(t.server.db, await serviceKey(t.server.db, 'token'), () => now);
    const { token, record } = await createToken(t.server.db, alice.id, ['orders:read'], null);
    assert.equal(authenticator.known?.(`Bearer ${token}`), undefined, 'not validated yet');
    const principal = await authenticator.authenticate(`Bearer ${token}`);
    assert.equal(authenticator.known?.(`Bearer ${token}`), principal);
    assert.equal(authenticator.known?.(`bearer   ${token}  `), principal, 'the scheme in any case, spaces around');
    assert.equal(authenticator.known?.(null), undefined);
    assert.equal(authenticator.known?.(`Basic ${token}`), undefined);
    assert.equal(authenticator.known?.(`Bearer ${token}x`), undefined, 'another token');
    await revokeToken(t.server.db, record.id);
    now += 1_999;
    assert.equal(authenticator.known?.(`Bearer ${token}`), principal, 'still cached');
    now += 2;
    assert.equal(authenticator.known?.(`Bearer ${token}`), undefined, 'the entry has expired');
  });

  it('never caches a token past its own expiry', async () => {
    let now = Date.now();
    const authenticator = createAuthenticator(t.server.db, await serviceKey(t.server.db, 'token'), () => now);
    const { token, record } = await createToken(t.server.db, alice.id, ['orders:read'], 3600);
    await authenticator.authenticate(`Bearer ${token}`);
    // The token expires in the database; the cached entry must not outlive it.
    await t.server.db
      .sql`UPDATE api_tokens SET expires_at = created_at + interval '1 millisecond' WHERE id = ${record.id}`;
    now = record.createdAt.getTime() + 3600_000 + 1;
    await assert.rejects(
      authenticator.authenticate(`Bearer ${token}`),
      (e: unknown) => e instanceof HttpError && e.status === 401,
    );
  });

  it('makes one lookup for many requests with one token at once, the cache cold', async () => {
    const { db, lookups } = countingLookups(t.server.db);
    const authenticator = createAuthenticator(db, await serviceKey(t.server.db, 'token'));
    const { token } = await createToken(t.server.db, alice.id, ['orders:read'], null);
    const principals = await Promise.all(
      Array.from({ length: 300 }, () => authenticator.authenticate(`Bearer ${token}`, new RequestScope())),
    );
    assert.deepEqual(new Set(principals.map((p) => p.userId)), new Set([alice.id]));
    assert.equal(lookups(), 1);
    // A token with a wrong tag: refused without a lookup (contract §10), and without a guess counted.
    let guesses = 0;
    const forged = `Bearer ${token.slice(0, -4)}AAAA`;
    const refusals = await Promise.allSettled(
      Array.from({ length: 20 }, () => authenticator.authenticate(forged, undefined, () => (guesses += 1))),
    );
    assert.deepEqual(
      refusals.map((r) => r.status === 'rejected' && r.reason instanceof HttpError && r.reason.status),
      Array(20).fill(401),
    );
    assert.deepEqual([lookups(), guesses], [1, 0]);
    // A token of the shape made before tags, unknown: one lookup shared by every request, each a guess.
    const untagged = `Bearer ord_${'A'.repeat(43)}`;
    const unknown = await Promise.allSettled(
      Array.from({ length: 20 }, () => authenticator.authenticate(untagged, undefined, () => (guesses += 1))),
    );
    assert.deepEqual(
      unknown.map((r) => r.status === 'rejected' && r.reason instanceof HttpError && r.reason.status),
      Array(20).fill(401),
    );
    assert.deepEqual([lookups(), guesses], [2, 20]);
  });

  it('looks the token up again for a request whose shared lookup its maker cancelled', async () => {
    const { db, lookups } = countingLookups(t.server.db);
    const authenticator = createAuthenticator(db, await serviceKey(t.server.db, 'token'));
    const { token } = await createToken(t.server.db, bob.id, ['orders:read'], null);
    const first = new RequestScope();
    const leader = authenticator.authenticate(`Bearer ${token}`, first);
    const follower = authenticator.authenticate(`Bearer ${token}`, new RequestScope());
    // The first request gives up (its deadline): its lookup is dropped or cancelled.
    assert.equal(first.abandon(), 'not-done');
    await assert.rejects(leader, (e: unknown) => !(e instanceof HttpError));
    assert.equal((await follower).userId, bob.id);
    assert.equal(lookups(), 2);
  });

  it('keeps scopes and role', async () => {
    const authenticator = createAuthenticator(t.server.db, await serviceKey(t.server.db, 'token'));
    const principal = await authenticator.authenticate(`Bearer ${admin.token}`);
    assert.equal(principal.role, 'admin');
    assert.equal(principal.scopes.has('webhooks:write'), true);
  });
});

/** `db` with its token lookups (FindActiveToken, on the pool or a request's handle) counted. */
function countingLookups(database: Database): { db: Database; lookups: () => number } {
  let count = 0;
  const counting = <T extends Db>(handle: T): T =>
    new Proxy(handle, {
      get: (target, key, receiver) => {
        const value = Reflect.get(target, key, receiver);
        if (key !== 'opt') return typeof value === 'function' ? value.bind(target) : value;
        return (name: 'FindActiveToken', params: [Uint8Array]) => {
          if (name === 'FindActiveToken') count += 1;
          return (value as Db['opt']).call(target, name, params);
        };
      },
    });
  const db = counting(database);
  const withHandles = new Proxy(db, {
    get: (target, key, receiver) =>
      key === 'handle'
        ? (scope?: RequestScope) => counting(database.handle(scope))
        : Reflect.get(target, key, receiver),
  });
  return { db: withHandles, lookups: () => count };
}
