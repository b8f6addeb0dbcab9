/**
 * What a client can put on the wire that `fetch()` would never send: methods
 * the fetch standard forbids (TRACE, CONNECT), absolute-form targets, paths
 * that URL parsing would rewrite, a body cut off mid-way, and a flood of
 * source addresses against the rate limiter. Each request is written byte by
 * byte with `node:net` and the answer read as it arrives, on the real server.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { rawRequest } from '../support/http.ts';
import { startTestServer, type Account, type TestServer } from '../support/server.ts';

interface RawResponse {
  /** `HTTP/1.1 405 Method Not Allowed` */
  readonly statusLine: string;
  /** Lower-case names. */
  readonly headers: ReadonlyMap<string, string>;
  readonly body: string;
  /** Everything the server sent, as it arrived. */
  readonly raw: string;
}

/** Writes `head` (CRLF line ends added) to the server and reads its answer until it closes the connection. */
async function exchange(url: string, lines: readonly string[]): Promise<RawResponse> {
  const socket = connect(Number(new URL(url).port), '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => {});
  socket.setTimeout(5_000, () => socket.destroy());
  socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  await once(socket, 'close');
  return parse(Buffer.concat(chunks).toString('latin1'));
}

function parse(raw: string): RawResponse {
  const end = raw.indexOf('\r\n\r\n');
  const [statusLine = '', ...fields] = (end === -1 ? raw : raw.slice(0, end)).split('\r\n');
  const headers = new Map<string, string>();
  for (const field of fields) {
    const colon = field.indexOf(':');
    headers.set(field.slice(0, colon).toLowerCase(), field.slice(colon + 1).trim());
  }
  let body = end === -1 ? '' : raw.slice(end + 4);
  if (headers.get('transfer-encoding') === 'chunked') {
    let decoded = '';
    for (let at = 0; ; ) {
      const lineEnd = body.indexOf('\r\n', at);
      const size = parseInt(body.slice(at, lineEnd), 16);
      if (!(size > 0)) break;
      decoded += body.slice(lineEnd + 2, lineEnd + 2 + size);
      at = lineEnd + 2 + size + 2;
    }
    body = decoded;
  }
  return { statusLine, headers, body, raw };
}

/** The request log line of `requestId`, once the server has written it. */
async function logLine(t: TestServer, requestId: string): Promise<Record<string, unknown>> {
  for (
    const deadline = Date.now() + 5_000;
    Date.now() < deadline;
    await new Promise((resolve) => setTimeout(resolve, 10))
  ) {
    const line = t.logs.find((l) => l.requestId === requestId && l.message === 'request');
    if (line !== undefined) return line;
  }
  throw new Error(`no request log line for ${requestId}`);
}

describe('on the wire', () => {
  let t: TestServer;
  let admin: Account;
  before(async () => {
    t = await startTestServer({ RATE_LIMIT: '1000/60' });
    admin = await t.user('admin');
  });
  after(async () => {
    await t.close();
  });

  describe('a method the fetch standard forbids', () => {
    it('TRACE on a known path: 405 method-not-allowed with Allow, rate limited and logged', async () => {
      const response = await exchange(t.url, [
        'TRACE /v1/orders HTTP/1.1',
        'Host: orders.test',
        'X-Request-Id: trace-1',
        'Connection: close',
      ]);
      assert.equal(response.statusLine, 'HTTP/1.1 405 Method Not Allowed');
      assert.equal(response.headers.get('allow'), 'GET, HEAD, POST, OPTIONS');
      assert.equal(response.headers.get('content-type'), 'application/problem+json');
      assert.equal(response.headers.get('ratelimit-policy'), '"default";q=1000;w=60');
      assert.match(response.headers.get('ratelimit') ?? '', /^"default";r=\d+;t=\d+$/);
      assert.deepEqual(JSON.parse(response.body), {
        type: '/problems/method-not-allowed',
        title: 'Method not allowed',
        status: 405,
        detail: 'TRACE is not allowed here; use GET, HEAD, POST, OPTIONS.',
        instance: '/v1/orders',
        requestId: 'trace-1',
      });
      const line = await logLine(t, 'trace-1');
      assert.deepEqual([line.method, line.path, line.status], ['TRACE', '/v1/orders', 405]);
    });

    it('TRACE elsewhere: 404 not-found', async () => {
      const response = await exchange(t.url, ['TRACE /v1/nowhere HTTP/1.1', 'Host: orders.test', 'Connection: close']);
      assert.equal(response.statusLine, 'HTTP/1.1 404 Not Found');
      assert.equal(JSON.parse(response.body).type, '/problems/not-found');
    });

    it('CONNECT to a known path: 405 with Allow, and the connection closed', async () => {
      const response = await exchange(t.url, [
        'CONNECT /v1/orders HTTP/1.1',
        'Host: orders.test',
        'X-Request-Id: connect-1',
      ]);
      assert.equal(response.statusLine, 'HTTP/1.1 405 Method Not Allowed');
      assert.equal(response.headers.get('allow'), 'GET, HEAD, POST, OPTIONS');
      assert.equal(response.headers.get('connection'), 'close');
      const line = await logLine(t, 'connect-1');
      assert.deepEqual([line.method, line.path, line.status], ['CONNECT', '/v1/orders', 405]);
    });

    it('CONNECT to an authority (a proxy tunnel): 404, and the connection closed', async () => {
      const response = await exchange(t.url, ['CONNECT example.com:443 HTTP/1.1', 'Host: example.com:443']);
      assert.equal(response.statusLine, 'HTTP/1.1 404 Not Found');
      assert.equal(response.headers.get('connection'), 'close');
    });
  });

  describe('an absolute-form target (RFC 9112 §3.2.2)', () => {
    it('is served by its path and query, whatever host it names', async () => {
      const response = await exchange(t.url, [
        'GET http://attacker.example/v1/products/1 HTTP/1.1',
        'Host: attacker.example',
        'Connection: close',
      ]);
      assert.equal(response.statusLine, 'HTTP/1.1 200 OK');
      assert.equal(JSON.parse(response.body).id, 1);
    });

    it('keeps its query, and nothing in the answer names its host', async () => {
      const response = await exchange(t.url, [
        'GET HTTPS://attacker.example:8443/v2/products?pageSize=2&page=2 HTTP/1.1',
        'Host: orders.test',
        'Connection: close',
      ]);
      assert.equal(response.statusLine, 'HTTP/1.1 200 OK');
      const body = JSON.parse(response.body);
      assert.equal(body.data.length, 2);
      assert.equal(body.data[0].id, 3);
      assert.ok(!response.raw.includes('attacker'), response.raw);
    });
  });

  describe('a path that URL parsing would rewrite onto another route', () => {
    const cases: [string, string][] = [
      ['a dot-dot segment', '/v1/orders/../users/{admin}'],
      ['a dot segment', '/v1/./products/1'],
      ['a percent-encoded dot-dot segment', '/v1/orders/%2e%2E/products/1'],
      ['a backslash', '/v1\\orders'],
      ['backslashes between all segments', '/v1\\products\\1'],
    ];
    for (const [what, target] of cases) {
      it(`is 404 with ${what}: ${target}`, async () => {
        const path = target.replace('{admin}', String(admin.id));
        const response = await exchange(t.url, [
          `GET ${path} HTTP/1.1`,
          'Host: orders.test',
          `Authorization: Bearer ${admin.token}`,
          'Connection: close',
        ]);
        assert.equal(response.statusLine, 'HTTP/1.1 404 Not Found');
        const body = JSON.parse(response.body);
        assert.equal(body.type, '/problems/not-found');
        assert.equal(body.instance, path);
      });
    }
  });

  describe('a client that closes the connection mid-body', () => {
    it('is logged as aborted, with no status, no 5xx and no database warning', async () => {
      const { token, id } = await t.user('customer');
      const socket = connect(Number(new URL(t.url).port), '127.0.0.1');
      socket.on('error', () => {});
      socket.write(
        [
          'POST /v1/orders HTTP/1.1',
          'Host: orders.test',
          `Authorization: Bearer ${token}`,
          'Content-Type: application/json',
          'Content-Length: 100',
          'Expect: 100-continue',
          'X-Request-Id: abort-1',
          '',
          '',
        ].join('\r\n'),
      );
      // The server answers "100 Continue" once it reads the body: routed, authenticated and counted (contract §11).
      const [chunk] = (await once(socket, 'data')) as [Buffer];
      assert.equal(chunk.toString('latin1'), 'HTTP/1.1 100 Continue\r\n\r\n');
      socket.write('{"items":[{"productId"');
      await new Promise((resolve) => setTimeout(resolve, 50));
      socket.destroy();
      const line = await logLine(t, 'abort-1');
      assert.deepEqual(
        {
          level: line.level,
          method: line.method,
          path: line.path,
          status: line.status,
          aborted: line.aborted,
          userId: line.userId,
        },
        { level: 'info', method: 'POST', path: '/v1/orders', status: null, aborted: true, userId: id },
      );
      const mine = t.logs.filter((l) => l.requestId === 'abort-1');
      assert.deepEqual(
        mine.filter((l) => l.message !== 'request'),
        [],
        'no other line: no "database unavailable", no "unhandled error"',
      );
      assert.deepEqual(
        t.logs.filter((l) => l.message === 'database unavailable'),
        [],
      );
    });
  });
});

describe('the rate limit under a flood of source addresses', () => {
  // Over 127.0.0.0/8, each connection can come from an address of its own.
  const BOUND = 20;
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ RATE_LIMIT: '5/60' }, undefined, { rateLimitMaxKeys: BOUND });
  });
  after(async () => {
    await t.close();
  });

  const get = (path: string, localAddress = '127.0.0.1') => rawRequest(`${t.url}${path}`, { localAddress });

  it('never gives a limited client a new window: new addresses past the bound share one overflow budget', async () => {
    const limited: number[] = [];
    for (let i = 0; i < 6; i++) limited.push((await get('/v1/products/1')).status);
    assert.deepEqual(limited, [200, 200, 200, 200, 200, 429]);

    // Twice the bound of new clients: the first fill the table beside the
    // limited one, the rest share one window of 5.
    const flood: number[] = [];
    for (let i = 1; i <= 2 * BOUND; i++) flood.push((await get('/v1/products/1', `127.0.1.${i}`)).status);

    const again = await get('/v1/products/1');
    assert.equal(again.status, 429, 'the limited client is still limited');
    const reset = /^"default";r=0;t=(\d+)$/.exec(String(again.headers.ratelimit));
    assert.ok(reset !== null && Number(reset[1]) >= 55 && Number(reset[1]) <= 60, String(again.headers.ratelimit));
    assert.equal(again.headers['retry-after'], reset[1]);
    assert.equal(again.headers['ratelimit-policy'], '"default";q=5;w=60');
    assert.deepEqual(flood, [
      ...new Array(BOUND - 1).fill(200),
      ...new Array(5).fill(200),
      ...new Array(BOUND - 4).fill(429),
    ]);
    // A client that got its own window before the table filled keeps it.
    assert.equal((await get('/v1/products/1', '127.0.1.1')).status, 200);
  });
});
