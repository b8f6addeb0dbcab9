/**
 * Behind a reverse proxy (contract §16): Debian's nginx, started on loopback
 * with the configuration docs/operations.md gives (test/fixtures/
 * nginx.conf.template, its addresses and cache folder replaced), in front
 * of the real server with TRUST_PROXY=127.0.0.1. It proves: the public
 * catalog is stored and revalidated (the origin answers 304); private and
 * no-store answers are never stored; a client's If-None-Match reaches the
 * origin; clients behind the proxy are told apart by their forwarded
 * address (connecting from 127.0.0.2 and 127.0.0.3, which Linux routes to
 * lo), and what a client writes in Forwarded or X-Forwarded-For is ignored.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { rawRequest, type RawRequest } from '../support/http.ts';
import { bearer, startTestServer, type Account, type TestServer } from '../support/server.ts';
import { findProgram, freePort, untilListening } from '../support/tools.ts';

const TEMPLATE = readFileSync(new URL('../fixtures/nginx.conf.template', import.meta.url), 'utf8');
const OPERATIONS = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');

/** nginx on PATH, or where Debian puts it (/usr/sbin is not on every user's PATH). */
const NGINX = findProgram(['nginx', '/usr/sbin/nginx'], ['-v']);
const SKIP = NGINX === undefined && 'nginx is not installed (Debian: apt-get install nginx-light); CI installs it';

/** A request from `localAddress` (127.0.0.2, 127.0.0.3…) to `port` on 127.0.0.1, on a connection of its own. */
const send = (port: number, path: string, options: RawRequest = {}) =>
  rawRequest(`http://127.0.0.1:${port}${path}`, options);

interface Nginx {
  readonly port: number;
  stop(): Promise<void>;
}

/** nginx in a folder of its own, in front of `origin`, with the documented configuration. */
async function startNginx(origin: string): Promise<Nginx> {
  const dir = mkdtempSync(join(tmpdir(), 'orders-nginx-'));
  const port = await freePort();
  const replace = (text: string, from: string, to: string) => {
    assert.equal(text.split(from).length, 2, `the template holds ${from} exactly once`);
    return text.replace(from, to);
  };
  let site = replace(TEMPLATE, 'listen 80;', `listen 127.0.0.1:${port};`);
  site = replace(site, 'server 127.0.0.1:3000;', `server ${new URL(origin).host};`);
  site = replace(site, '/var/cache/nginx/orders', join(dir, 'cache'));
  writeFileSync(join(dir, 'orders.conf'), site);
  writeFileSync(
    join(dir, 'nginx.conf'),
    [
      // As root, nginx's workers would otherwise run as nobody, who cannot write this folder.
      ...(process.getuid?.() === 0 ? [`user ${userInfo().username};`] : []),
      'worker_processes 1;',
      `error_log ${join(dir, 'error.log')} warn;`,
      'events { worker_connections 256; }',
      'http {',
      '    access_log off;',
      ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(
        (kind) => `    ${kind}_temp_path ${join(dir, kind)};`,
      ),
      `    include ${join(dir, 'orders.conf')};`,
      '}',
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn(
    NGINX as string,
    [
      '-e',
      join(dir, 'error.log'),
      '-p',
      dir,
      '-c',
      join(dir, 'nginx.conf'),
      '-g',
      `daemon off; pid ${join(dir, 'nginx.pid')};`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const log = () =>
    `${stderr}${existsSync(join(dir, 'error.log')) ? readFileSync(join(dir, 'error.log'), 'utf8') : ''}`;
  // Ready when it accepts a connection; an nginx that exits instead fails the test with its log.
  await untilListening(port, () => child.exitCode !== null, log);
  return {
    port,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The origin's request log lines for `path`. */
const linesFor = (t: TestServer, path: string) =>
  t.logs.filter((line) => line.message === 'request' && line.path === path);

describe('the nginx configuration of docs/operations.md', () => {
  it('is quoted there word for word', () => {
    assert.ok(
      OPERATIONS.includes(`\`\`\`nginx\n${TEMPLATE}\`\`\``),
      'docs/operations.md does not quote test/fixtures/nginx.conf.template as it is',
    );
  });
});

describe('nginx in front of the service', { skip: SKIP }, () => {
  let origin: TestServer;
  let proxy: Nginx;
  let customer: Account;
  let order: number;

  before(async () => {
    origin = await startTestServer({ CACHE_MAX_AGE: '1', TRUST_PROXY: '127.0.0.1' });
    proxy = await startNginx(origin.url);
    customer = await origin.user('customer');
    const created = await origin.fetch('/v2/orders', {
      method: 'POST',
      headers: { ...bearer(customer.token), 'content-type': 'application/json' },
      body: '{"items":[{"productId":1,"qty":1}]}',
    });
    order = (await created.json()).id;
  });
  after(async () => {
    await proxy?.stop();
    await origin?.close();
  });

  it('stores the public catalog, then revalidates it with the origin answering 304', async () => {
    const path = '/v2/products/2';
    const first = await send(proxy.port, path);
    assert.equal(first.status, 200);
    assert.equal(first.headers['x-cache-status'], 'MISS');
    assert.equal(first.headers['cache-control'], 'public, max-age=1');
    const second = await send(proxy.port, path);
    assert.equal(second.status, 200);
    assert.equal(second.headers['x-cache-status'], 'HIT');
    assert.equal(second.text, first.text);
    assert.equal(second.headers.etag, first.headers.etag);
    assert.deepEqual(
      linesFor(origin, path).map((line) => line.status),
      [200],
    );
    // Once the stored copy is stale (max-age=1), nginx asks the origin with its tag.
    let answer = second;
    for (
      const deadline = Date.now() + 5_000;
      answer.headers['x-cache-status'] !== 'REVALIDATED' && Date.now() < deadline;
    ) {
      assert.equal(answer.headers['x-cache-status'], 'HIT');
      await new Promise((resolve) => setTimeout(resolve, 100));
      answer = await send(proxy.port, path);
    }
    assert.equal(answer.headers['x-cache-status'], 'REVALIDATED');
    assert.equal(answer.status, 200);
    assert.equal(answer.text, first.text);
    assert.deepEqual(
      linesFor(origin, path).map((line) => line.status),
      [200, 304],
    );
  });

  it('keeps the codings of a stored answer apart (Vary: Accept-Encoding): each client gets its own', async () => {
    const path = '/v2/products?pageSize=20';
    const ask = (acceptEncoding?: string) =>
      send(proxy.port, path, { headers: acceptEncoding === undefined ? {} : { 'accept-encoding': acceptEncoding } });
    const gzipped = await ask('gzip');
    assert.equal(gzipped.status, 200);
    assert.equal(gzipped.headers['content-encoding'], 'gzip');
    assert.equal(gzipped.headers['x-cache-status'], 'MISS');
    assert.match(String(gzipped.headers.vary), /Accept-Encoding/);
    const plain = await ask();
    assert.equal(plain.status, 200);
    assert.equal(plain.headers['content-encoding'], undefined);
    assert.equal(plain.headers['x-cache-status'], 'MISS');
    assert.equal(JSON.parse(plain.text).data.length, 20);
    const brotli = await ask('br');
    assert.equal(brotli.headers['content-encoding'], 'br');
    assert.equal(brotli.headers['x-cache-status'], 'MISS');
    // Each coding is now stored under its own variant, with its own tag.
    const tags = new Set([gzipped.headers.etag, plain.headers.etag, brotli.headers.etag]);
    assert.equal(tags.size, 3);
    const again = await ask();
    assert.equal(again.headers['content-encoding'], undefined);
    assert.equal(again.text, plain.text);
  });

  it('never stores a private answer: both requests for an order reach the origin', async () => {
    const path = `/v2/orders/${order}`;
    const before = linesFor(origin, path).length;
    for (let i = 0; i < 2; i++) {
      const answer = await send(proxy.port, path, { headers: bearer(customer.token) });
      assert.equal(answer.status, 200);
      assert.equal(answer.headers['cache-control'], 'private, max-age=1');
      assert.equal(answer.headers['x-cache-status'], 'MISS');
    }
    assert.deepEqual(
      linesFor(origin, path)
        .slice(before)
        .map((line) => line.status),
      [200, 200],
    );
  });

  it('never stores a no-store answer: a user, a 404', async () => {
    for (const [path, status, headers] of [
      [`/v2/users/${customer.id}`, 200, bearer(customer.token)],
      ['/v2/products/999999', 404, {}],
    ] as const) {
      const before = linesFor(origin, path).length;
      for (let i = 0; i < 2; i++) {
        const answer = await send(proxy.port, path, { headers });
        assert.equal(answer.status, status);
        assert.equal(answer.headers['cache-control'], 'no-store');
        assert.equal(answer.headers['x-cache-status'], 'MISS');
      }
      assert.deepEqual(
        linesFor(origin, path)
          .slice(before)
          .map((line) => line.status),
        [status, status],
        path,
      );
    }
  });

  it("passes a client's If-None-Match on a private order through: the origin answers 304", async () => {
    const path = `/v2/orders/${order}`;
    const etag = (await send(proxy.port, path, { headers: bearer(customer.token) })).headers.etag as string;
    const before = linesFor(origin, path).length;
    const answer = await send(proxy.port, path, { headers: { ...bearer(customer.token), 'if-none-match': etag } });
    assert.equal(answer.status, 304);
    assert.equal(answer.headers.etag, etag);
    assert.equal(answer.text, '');
    assert.deepEqual(
      linesFor(origin, path)
        .slice(before)
        .map((line) => line.status),
      [304],
    );
  });

  it('passes If-Match on a write through: a stale tag is 412 from the origin', async () => {
    const path = `/v2/orders/${order}`;
    const answer = await send(proxy.port, path, {
      method: 'PATCH',
      headers: { ...bearer(customer.token), 'content-type': 'application/merge-patch+json', 'if-match': '"stale"' },
      body: '{"items":[{"productId":1,"qty":2}]}',
    });
    assert.equal(answer.status, 412);
    assert.equal(linesFor(origin, path).at(-1)?.status, 412);
  });

  it("logs the client's address, never what the client wrote in Forwarded or X-Forwarded-For", async () => {
    const answer = await send(proxy.port, '/healthz', {
      localAddress: '127.0.0.2',
      headers: { forwarded: 'for=203.0.113.9', 'x-forwarded-for': '203.0.113.9', 'x-request-id': 'nginx-spoof-1' },
    });
    assert.equal(answer.status, 200);
    const line = origin.logs.find((l) => l.requestId === 'nginx-spoof-1');
    assert.equal(line?.clientAddress, '127.0.0.2');
  });
});

describe('clients behind nginx and the rate limit', { skip: SKIP }, () => {
  let origin: TestServer;
  let proxy: Nginx;
  before(async () => {
    origin = await startTestServer({ TRUST_PROXY: '127.0.0.1', RATE_LIMIT: '3/60' });
    proxy = await startNginx(origin.url);
  });
  after(async () => {
    await proxy?.stop();
    await origin?.close();
  });

  it('gives each client its own budget, though every request comes from nginx', async () => {
    // The status and the remaining requests the RateLimit field announces.
    const from = async (localAddress: string) => {
      // Refused without a token (never stored by nginx): counted against the client's address.
      const answer = await send(proxy.port, '/v1/orders', { localAddress });
      const field = /^"default";r=(\d+);t=(\d+)$/.exec(String(answer.headers.ratelimit));
      assert.ok(field !== null && Number(field[2]) >= 59 && Number(field[2]) <= 60, String(answer.headers.ratelimit));
      return [answer.status, Number(field[1])];
    };
    assert.deepEqual(await from('127.0.0.2'), [401, 2]);
    assert.deepEqual(await from('127.0.0.2'), [401, 1]);
    assert.deepEqual(await from('127.0.0.3'), [401, 2]);
    assert.deepEqual(await from('127.0.0.2'), [401, 0]);
    assert.deepEqual(await from('127.0.0.2'), [429, 0]);
    assert.deepEqual(await from('127.0.0.3'), [401, 1]);
    assert.deepEqual(await from('127.0.0.3'), [401, 0]);
    assert.deepEqual(await from('127.0.0.3'), [429, 0]);
    const addresses = origin.logs
      .filter((l) => l.message === 'request' && l.path === '/v1/orders')
      .map((l) => l.clientAddress);
    assert.deepEqual(addresses, [
      '127.0.0.2',
      '127.0.0.2',
      '127.0.0.3',
      '127.0.0.2',
      '127.0.0.2',
      '127.0.0.3',
      '127.0.0.3',
      '127.0.0.3',
    ]);
  });
});
