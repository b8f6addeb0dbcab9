/**
 * The request pipeline on its own: real Requests through createApp() with
 * routes made for the test, so every error path can be reached.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createApp } from '../../src/pipeline/pipeline.ts';
import type { RouteSpec, Services } from '../../src/pipeline/context.ts';
import type { Authenticator, Principal } from '../../src/auth/authenticator.ts';
import { loadConfig } from '../../src/config/config.ts';
import type { Database } from '../../src/db/database.ts';
import { DatabaseUnreachable, OutcomeUnknown } from '../../src/db/errors.ts';
import { HttpError } from '../../src/http/problem.ts';
import { createLogger } from '../../src/base/logger.ts';

const lines: Record<string, unknown>[] = [];
const principal: Principal = { userId: 42, role: 'customer', tokenId: 1, scopes: new Set(['orders:read']) };
const authenticator: Authenticator = {
  async authenticate(header) {
    if (header === 'Bearer good') return principal;
    throw new HttpError(401, 'unauthorized');
  },
};
const services: Services = {
  config: loadConfig({ MAX_BODY_BYTES: '16' }),
  db: {} as Database,
  log: createLogger('debug', (line) => lines.push(JSON.parse(line))),
  authenticator,
  cursorKeys: { keys: [new Uint8Array(32)], reload: async () => {}, stop: () => {} },
};

const doc = { summary: 'test route', success: { status: 200 } } as const;
const routes: RouteSpec[] = [
  {
    method: 'GET',
    pattern: '/boom',
    auth: 'public',
    doc,
    handler: async () => {
      throw new Error('secret SQL: SELECT * FROM users');
    },
  },
  {
    method: 'GET',
    pattern: '/circuit-open',
    auth: 'public',
    doc,
    handler: async () => {
      throw new DatabaseUnreachable('the database cannot be reached (the last statements failed to reach it)');
    },
  },
  {
    method: 'GET',
    pattern: '/db-down',
    auth: 'public',
    doc,
    handler: async () => {
      throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    },
  },
  // contract §17: a server shutting down, crashed, starting, read-only (promoting), or a connection failure.
  ...['57P01', '57P02', '57P03', '25006', '08006', '08001'].map(
    (code): RouteSpec => ({
      method: 'GET',
      pattern: `/db-${code}`,
      auth: 'public',
      doc,
      handler: async () => {
        throw Object.assign(new Error(`the server said ${code}`), { code });
      },
    }),
  ),
  {
    method: 'POST',
    pattern: '/commit-lost',
    auth: 'public',
    doc,
    handler: async () => {
      throw new OutcomeUnknown(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
    },
  },
  {
    method: 'GET',
    pattern: '/unique',
    auth: 'public',
    doc,
    handler: async () => {
      throw Object.assign(new Error('duplicate key'), { code: '23505' });
    },
  },
  {
    method: 'GET',
    pattern: '/thrown-string',
    auth: 'public',
    doc,
    handler: async () => {
      throw 'a string';
    },
  },
  {
    method: 'GET',
    pattern: '/mine',
    auth: 'orders:read',
    doc,
    handler: async (ctx) => Response.json({ user: ctx.principal?.userId, version: ctx.version }),
  },
  { method: 'GET', pattern: '/admin', auth: 'users:write', doc, handler: async () => new Response('never') },
  { method: 'POST', pattern: '/echo', auth: 'public', doc, handler: async (ctx) => new Response(ctx.body) },
];
const app = createApp(services, routes);
const call = (path: string, init?: RequestInit) =>
  app(new Request(`http://localhost${path}`, init), { remoteAddress: '127.0.0.1' });

describe('createApp()', () => {
  it('answers an exception with a 500 that shows nothing of it, and logs it under the request id', async () => {
    const response = await call('/boom', { headers: { 'x-request-id': 'boom-1' } });
    assert.equal(response.status, 500);
    const text = await response.text();
    assert.ok(!text.includes('secret'), text);
    assert.ok(!text.includes('SELECT'), text);
    const body = JSON.parse(text);
    assert.equal(body.type, '/problems/internal');
    assert.equal(body.requestId, 'boom-1');
    const logged = lines.find((l) => l.requestId === 'boom-1' && l.level === 'error');
    assert.ok(logged);
    assert.equal((logged.error as { message: string }).message, 'secret SQL: SELECT * FROM users');
    assert.match(String((logged.error as { stack: string }).stack), /app\.test\.ts/);
  });

  it('answers a non-Error exception with 500 too', async () => {
    assert.equal((await call('/thrown-string')).status, 500);
  });

  it('answers an unexpected database error (a constraint) with 500', async () => {
    assert.equal((await call('/unique')).status, 500);
  });

  for (const path of ['/db-down', '/db-57P01', '/db-57P02', '/db-57P03', '/db-25006', '/db-08006', '/db-08001']) {
    it(`answers database unavailability (${path}) with 503 and Retry-After, logged at warn`, async () => {
      const id = `unavailable${path.replaceAll('/', '-')}`;
      const response = await call(path, { headers: { 'x-request-id': id } });
      assert.equal(response.status, 503);
      assert.equal(response.headers.get('retry-after'), '5');
      assert.equal((await response.json()).type, '/problems/unavailable');
      const logged = lines.filter((l) => l.requestId === id && l.message !== 'request');
      assert.deepEqual(
        logged.map((l) => [l.level, l.message]),
        [['warn', 'database unavailable']],
      );
    });
  }

  it('answers a refusal of the open circuit with 503 and Retry-After, logging nothing but its request', async () => {
    const response = await call('/circuit-open', { headers: { 'x-request-id': 'circuit-open-1' } });
    assert.equal(response.status, 503);
    assert.equal(response.headers.get('retry-after'), '5');
    assert.equal((await response.json()).type, '/problems/unavailable');
    assert.deepEqual(
      lines.filter((l) => l.requestId === 'circuit-open-1').map((l) => [l.level, l.message]),
      [['info', 'request']],
    );
  });

  it('answers a write whose outcome is unknown with 503 outcome-unknown, Retry-After: 1, logged at warn', async () => {
    const response = await call('/commit-lost', { method: 'POST', headers: { 'x-request-id': 'lost-1' } });
    assert.equal(response.status, 503);
    assert.equal(response.headers.get('retry-after'), '1');
    const body = await response.json();
    assert.equal(body.type, '/problems/outcome-unknown');
    assert.equal(body.title, 'The outcome of the request is unknown');
    const logged = lines.filter((l) => l.requestId === 'lost-1' && l.message !== 'request');
    assert.deepEqual(
      logged.map((l) => [l.level, l.message]),
      [['warn', 'database: a write was sent and not answered; its outcome is unknown']],
    );
  });

  it('hands the principal and version to the handler', async () => {
    const response = await call('/v2/mine', { headers: { authorization: 'Bearer good' } });
    assert.deepEqual(await response.json(), { user: 42, version: 2 });
    assert.equal((await (await call('/mine', { headers: { authorization: 'Bearer good' } })).json()).version, 1);
  });

  it('checks the route scope after authenticating', async () => {
    const response = await call('/admin', { headers: { authorization: 'Bearer good' } });
    assert.equal(response.status, 403);
    assert.equal(response.headers.get('www-authenticate'), 'Bearer error="insufficient_scope", scope="users:write"');
  });

  it('authenticates before the scope check, so no token is a 401', async () => {
    assert.equal((await call('/admin')).status, 401);
  });

  it('hands the body read within the limit to the handler', async () => {
    const response = await call('/echo', { method: 'POST', body: '0123456789abcdef' });
    assert.equal(await response.text(), '0123456789abcdef');
  });

  it('answers a body one byte over the limit with 413', async () => {
    assert.equal((await call('/echo', { method: 'POST', body: '0123456789abcdefX' })).status, 413);
  });

  it('adds X-Request-Id to every response, errors included', async () => {
    for (const path of ['/mine', '/boom', '/nowhere']) {
      assert.match((await call(path)).headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
    }
  });
});
