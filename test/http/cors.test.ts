/**
 * CORS (contract §16): the pure rules of src/http/cors.ts, the pipeline's use of
 * them with routes made for the test, and the real server with fetch (what
 * a browser sends, field by field). The browser itself is driven by the
 * playwright tests.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createApp } from '../../src/pipeline/pipeline.ts';
import type { RouteSpec } from '../../src/pipeline/context.ts';
import type { Authenticator } from '../../src/auth/authenticator.ts';
import { loadConfig } from '../../src/config/config.ts';
import type { Database } from '../../src/db/database.ts';
import {
  ALLOWED_HEADERS,
  corsPolicy,
  EXPOSED_HEADERS,
  isPreflight,
  parseOrigin,
  preflightFields,
  responseFields,
  varyWith,
} from '../../src/http/cors.ts';
import { HttpError } from '../../src/http/problem.ts';
import { createLogger } from '../../src/base/logger.ts';
import { bearer, startTestServer, type TestServer } from '../support/server.ts';

const APP = 'https://app.example';
const OTHER = 'https://evil.example';
const ALLOW_HEADERS = 'Accept, Authorization, Content-Type, Idempotency-Key, If-Match, If-None-Match, X-Request-Id';
const EXPOSE_HEADERS =
  'ETag, Location, Link, RateLimit, RateLimit-Policy, Retry-After, Deprecation, Sunset, X-Request-Id, ' +
  'Idempotent-Replayed';
const PREFLIGHT_VARY = 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers';

/** The access-control-* fields of `response`, by name. */
function corsFields(response: Response): Record<string, string> {
  return Object.fromEntries([...response.headers].filter(([name]) => name.startsWith('access-control-')));
}

describe('parseOrigin()', () => {
  const cases: [string, string | undefined][] = [
    ['https://app.example', 'https://app.example'],
    ['HTTPS://App.Example', 'https://app.example'],
    ['https://app.example:443', 'https://app.example'],
    ['http://localhost:5173', 'http://localhost:5173'],
    ['http://[::1]:8080', 'http://[::1]:8080'],
    ['https://bücher.example', 'https://xn--bcher-kva.example'],
    ['https://app.example/', undefined],
    ['https://app.example/path', undefined],
    ['https://app.example?x=1', undefined],
    ['https://user@app.example', undefined],
    ['ftp://app.example', undefined],
    ['app.example', undefined],
    ['null', undefined],
    ['*', undefined],
    ['', undefined],
  ];
  for (const [value, expected] of cases) {
    it(`reads ${JSON.stringify(value)} as ${JSON.stringify(expected)}`, () => {
      assert.equal(parseOrigin(value), expected);
    });
  }
});

describe('corsPolicy()', () => {
  describe('with a list', () => {
    const allow = corsPolicy([APP, 'http://localhost:5173']);
    it('answers a listed origin with itself', () => {
      assert.equal(allow(APP), APP);
      assert.equal(allow('http://localhost:5173'), 'http://localhost:5173');
    });
    it('gives nothing to an origin not listed, nor to a near miss, null or none', () => {
      for (const origin of [
        OTHER,
        'https://app.example:8443',
        'http://app.example',
        'https://app.example.evil.example',
        'null',
        '',
        null,
      ]) {
        assert.equal(allow(origin), undefined, String(origin));
      }
    });
  });
  describe('with *', () => {
    const allow = corsPolicy('*');
    it('answers every well-formed origin with itself, never with *', () => {
      assert.equal(allow(OTHER), OTHER);
      assert.equal(allow('http://[::1]:3000'), 'http://[::1]:3000');
    });
    it('gives nothing to null (an opaque origin), a malformed value or none', () => {
      for (const origin of ['null', 'https://a.example/path', 'https://a.example\r\nx: y', 'not an origin', null]) {
        assert.equal(allow(origin), undefined, String(origin));
      }
    });
  });
});

describe('isPreflight()', () => {
  it('is an OPTIONS with Origin and Access-Control-Request-Method', () => {
    assert.equal(isPreflight('OPTIONS', APP, 'PATCH'), true);
  });
  it('is not without either field, nor for another method', () => {
    assert.equal(isPreflight('OPTIONS', APP, null), false);
    assert.equal(isPreflight('OPTIONS', null, 'PATCH'), false);
    assert.equal(isPreflight('GET', APP, 'PATCH'), false);
  });
});

describe('preflightFields() and responseFields()', () => {
  it("answer a preflight with the origin, the path's methods, the allowed request fields and a max age", () => {
    assert.deepEqual(preflightFields(APP, 'GET, HEAD, OPTIONS'), [
      ['access-control-allow-origin', APP],
      ['access-control-allow-methods', 'GET, HEAD, OPTIONS'],
      ['access-control-allow-headers', ALLOW_HEADERS],
      ['access-control-max-age', '7200'],
    ]);
  });
  it('answer any other request with the origin and the exposed response fields', () => {
    assert.deepEqual(responseFields(APP), [
      ['access-control-allow-origin', APP],
      ['access-control-expose-headers', EXPOSE_HEADERS],
    ]);
  });
  it('allow the request fields contract §16 names and expose the response fields it names', () => {
    for (const name of [
      'Authorization',
      'Content-Type',
      'Idempotency-Key',
      'If-Match',
      'If-None-Match',
      'Accept',
      'X-Request-Id',
    ])
      assert.ok((ALLOWED_HEADERS as readonly string[]).includes(name), name);
    assert.equal(EXPOSED_HEADERS.join(', '), EXPOSE_HEADERS);
  });
});

describe('varyWith()', () => {
  const cases: [string | null, string[], string][] = [
    [null, ['Origin'], 'Origin'],
    ['', ['Origin'], 'Origin'],
    ['Accept, Authorization', ['Origin'], 'Accept, Authorization, Origin'],
    ['Accept, origin', ['Origin'], 'Accept, origin'],
    ['*', ['Origin'], '*'],
    ['Accept', ['Origin', 'Access-Control-Request-Method'], 'Accept, Origin, Access-Control-Request-Method'],
  ];
  for (const [current, names, expected] of cases) {
    it(`adds ${names.join(', ')} to ${JSON.stringify(current)}: ${JSON.stringify(expected)}`, () => {
      assert.equal(varyWith(current, names), expected);
    });
  }

  it('gives each value its own answer when one list of names is asked again and again (it remembers them)', () => {
    const origin = ['Origin'];
    for (let round = 0; round < 2; round += 1)
      for (const [current, , expected] of cases.filter(([, names]) => names.length === 1))
        assert.equal(varyWith(current, origin), expected, `${JSON.stringify(current)}, round ${round + 1}`);
    // Past what it remembers of one list, each answer is still worked out.
    for (let i = 0; i < 100; i += 1) assert.equal(varyWith(`X-${i}`, origin), `X-${i}, Origin`);
    assert.equal(varyWith('Accept', origin), 'Accept, Origin');
  });
});

describe('the pipeline with CORS_ORIGINS', () => {
  const authenticator: Authenticator = {
    authenticate: async () => {
      throw new HttpError(401, 'unauthorized');
    },
  };
  const doc = { summary: 'test route', success: { status: 200 } } as const;
  const routes: RouteSpec[] = [
    { method: 'GET', pattern: '/things', auth: 'public', doc, handler: async () => Response.json({ ok: true }) },
    { method: 'POST', pattern: '/things', auth: 'orders:write', doc, handler: async () => Response.json({ ok: true }) },
  ];
  const newApp = (env: Record<string, string>) =>
    createApp(
      {
        config: loadConfig(env),
        db: {} as Database,
        log: createLogger('silent'),
        authenticator,
        cursorKeys: { keys: [new Uint8Array(32)], reload: async () => {}, stop: () => {} },
      },
      routes,
    );
  const preflight = (origin: string) =>
    new Request('http://localhost/v2/things', {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, idempotency-key',
      },
    });
  const client = { remoteAddress: '192.0.2.1' };

  it('answers preflights from a listed origin with 204 and no token, never 429, and does not count them', async () => {
    const app = newApp({ CORS_ORIGINS: APP, RATE_LIMIT: '2/60' });
    for (let i = 0; i < 5; i++) {
      const response = await app(preflight(APP), client);
      assert.equal(response.status, 204);
      assert.equal(response.headers.get('access-control-allow-methods'), 'GET, HEAD, POST, OPTIONS');
      assert.equal(response.headers.get('ratelimit'), null);
    }
    // The client's whole budget is still there.
    const first = await app(new Request('http://localhost/v2/things'), client);
    assert.equal(first.headers.get('ratelimit'), '"default";r=1;t=60');
  });

  it('counts an OPTIONS that is no preflight, and a preflight from an origin not listed, as any request', async () => {
    const app = newApp({ CORS_ORIGINS: APP, RATE_LIMIT: '2/60' });
    const plain = await app(new Request('http://localhost/v2/things', { method: 'OPTIONS' }), client);
    assert.equal(plain.headers.get('ratelimit'), '"default";r=1;t=60');
    const stranger = await app(preflight(OTHER), client);
    assert.equal(stranger.status, 204);
    assert.deepEqual(corsFields(stranger), {});
    assert.equal(stranger.headers.get('ratelimit'), '"default";r=0;t=60');
    assert.equal((await app(preflight(OTHER), client)).status, 429);
    // A listed origin's preflight is still answered.
    assert.equal((await app(preflight(APP), client)).status, 204);
  });

  it('gives a 429 to a listed origin with the CORS fields, so that its script can read Retry-After', async () => {
    const app = newApp({ CORS_ORIGINS: APP, RATE_LIMIT: '1/60' });
    await app(new Request('http://localhost/v2/things', { headers: { origin: APP } }), client);
    const refused = await app(new Request('http://localhost/v2/things', { headers: { origin: APP } }), client);
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('retry-after'), '60');
    assert.deepEqual(corsFields(refused), {
      'access-control-allow-origin': APP,
      'access-control-expose-headers': EXPOSE_HEADERS,
    });
    assert.equal(refused.headers.get('vary'), 'Accept, Accept-Encoding, Origin');
  });

  it('adds nothing at all when CORS_ORIGINS is unset, whatever the request says', async () => {
    const app = newApp({});
    const answered = await app(preflight(APP), client);
    assert.equal(answered.status, 204);
    assert.deepEqual(corsFields(answered), {});
    assert.equal(answered.headers.get('vary'), null);
    const read = await app(new Request('http://localhost/v2/things', { headers: { origin: APP } }), client);
    assert.deepEqual(corsFields(read), {});
    assert.equal(read.headers.get('vary'), 'Accept, Accept-Encoding');
  });
});

describe('CORS on the real server', () => {
  let t: TestServer;
  let wildcard: TestServer;
  before(async () => {
    t = await startTestServer({ CORS_ORIGINS: `${APP}, http://localhost:5173`, RATE_LIMIT: '1000/60' });
    wildcard = await startTestServer({ CORS_ORIGINS: '*' }, t.database);
  });
  after(async () => {
    await wildcard.close();
    await t.close();
  });

  describe('a preflight from a listed origin', () => {
    it('is 204 with exactly the CORS answer, and no token is asked for', async () => {
      const response = await fetch(`${t.url}/v2/orders/1`, {
        method: 'OPTIONS',
        headers: {
          origin: APP,
          'access-control-request-method': 'PATCH',
          'access-control-request-headers': 'authorization,content-type,if-match',
        },
      });
      assert.equal(response.status, 204);
      assert.deepEqual(corsFields(response), {
        'access-control-allow-origin': APP,
        'access-control-allow-methods': 'GET, HEAD, PUT, PATCH, DELETE, OPTIONS',
        'access-control-allow-headers': ALLOW_HEADERS,
        'access-control-max-age': '7200',
      });
      assert.equal(response.headers.get('vary'), PREFLIGHT_VARY);
      assert.equal(response.headers.get('www-authenticate'), null);
      assert.equal(response.headers.get('ratelimit'), null);
      assert.equal(await response.text(), '');
    });

    it('names the methods of the path it is for', async () => {
      const response = await fetch(`${t.url}/v2/products`, {
        method: 'OPTIONS',
        headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'GET' },
      });
      assert.equal(response.status, 204);
      assert.equal(response.headers.get('access-control-allow-origin'), 'http://localhost:5173');
      assert.equal(response.headers.get('access-control-allow-methods'), 'GET, HEAD, OPTIONS');
    });

    it('to a path that names nothing is the 404, readable by the origin', async () => {
      const response = await fetch(`${t.url}/v2/nothing-here`, {
        method: 'OPTIONS',
        headers: { origin: APP, 'access-control-request-method': 'GET' },
      });
      assert.equal(response.status, 404);
      assert.deepEqual(corsFields(response), {
        'access-control-allow-origin': APP,
        'access-control-expose-headers': EXPOSE_HEADERS,
      });
    });
  });

  describe('an actual request from a listed origin', () => {
    const expected = { 'access-control-allow-origin': APP, 'access-control-expose-headers': EXPOSE_HEADERS };

    it('gets the CORS fields and Vary: Origin on a 200', async () => {
      const response = await t.fetch('/v2/products/1', { headers: { origin: APP } });
      assert.equal(response.status, 200);
      assert.deepEqual(corsFields(response), expected);
      assert.equal(response.headers.get('vary'), 'Accept, Accept-Encoding, Origin');
    });

    it('gets them on a 304', async () => {
      const etag = (await t.fetch('/v2/products/1')).headers.get('etag') as string;
      const response = await t.fetch('/v2/products/1', { headers: { origin: APP, 'if-none-match': etag } });
      assert.equal(response.status, 304);
      assert.deepEqual(corsFields(response), expected);
      assert.equal(response.headers.get('vary'), 'Accept, Accept-Encoding, Origin');
    });

    it('gets them on errors: 401, 404, 405', async () => {
      const unauthorized = await t.fetch('/v2/orders', { headers: { origin: APP } });
      assert.equal(unauthorized.status, 401);
      assert.deepEqual(corsFields(unauthorized), expected);
      assert.equal(unauthorized.headers.get('vary'), 'Accept, Authorization, Accept-Encoding, Origin');
      const missing = await t.fetch('/v2/products/999999', { headers: { origin: APP } });
      assert.equal(missing.status, 404);
      assert.deepEqual(corsFields(missing), expected);
      const wrongMethod = await t.fetch('/v2/products/1', { method: 'DELETE', headers: { origin: APP } });
      assert.equal(wrongMethod.status, 405);
      assert.deepEqual(corsFields(wrongMethod), expected);
      assert.equal(wrongMethod.headers.get('vary'), 'Accept-Encoding, Origin');
    });

    it('gets them on a write with a token, Location exposed', async () => {
      const customer = await t.user('customer');
      const response = await t.fetch('/v2/orders', {
        method: 'POST',
        headers: { origin: APP, ...bearer(customer.token), 'content-type': 'application/json' },
        body: '{"items":[{"productId":1,"qty":1}]}',
      });
      assert.equal(response.status, 201);
      assert.deepEqual(corsFields(response), expected);
      assert.equal(response.headers.get('access-control-allow-credentials'), null);
    });
  });

  describe('an origin not listed', () => {
    it('gets no CORS field on a request, only Vary: Origin for caches', async () => {
      const response = await t.fetch('/v2/products/1', { headers: { origin: OTHER } });
      assert.equal(response.status, 200);
      assert.deepEqual(corsFields(response), {});
      assert.equal(response.headers.get('vary'), 'Accept, Accept-Encoding, Origin');
    });

    it('gets the ordinary OPTIONS answer to a preflight', async () => {
      const response = await fetch(`${t.url}/v2/orders/1`, {
        method: 'OPTIONS',
        headers: { origin: OTHER, 'access-control-request-method': 'PATCH' },
      });
      assert.equal(response.status, 204);
      assert.deepEqual(corsFields(response), {});
      assert.equal(response.headers.get('allow'), 'GET, HEAD, PUT, PATCH, DELETE, OPTIONS');
      assert.equal(response.headers.get('vary'), 'Origin');
    });

    it('gets none with no Origin at all', async () => {
      const response = await t.fetch('/v2/products/1');
      assert.deepEqual(corsFields(response), {});
      assert.equal(response.headers.get('vary'), 'Accept, Accept-Encoding, Origin');
    });
  });

  describe('CORS_ORIGINS=*', () => {
    it('answers any origin with itself (never *), and a preflight too', async () => {
      const response = await wildcard.fetch('/v2/products/1', { headers: { origin: OTHER } });
      assert.equal(response.headers.get('access-control-allow-origin'), OTHER);
      const answered = await fetch(`${wildcard.url}/v2/orders`, {
        method: 'OPTIONS',
        headers: { origin: 'http://localhost:1234', 'access-control-request-method': 'POST' },
      });
      assert.equal(answered.status, 204);
      assert.equal(answered.headers.get('access-control-allow-origin'), 'http://localhost:1234');
      assert.equal(answered.headers.get('access-control-allow-methods'), 'GET, HEAD, POST, OPTIONS');
    });

    it('gives nothing to the opaque origin null', async () => {
      const response = await wildcard.fetch('/v2/products/1', { headers: { origin: 'null' } });
      assert.deepEqual(corsFields(response), {});
    });
  });
});
