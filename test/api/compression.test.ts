/**
 * Compressed answers on the real server (contract §16): each request is sent
 * with `node:http`, which decodes nothing, so the test sees the bytes and
 * fields as they leave the service; and with curl's `--compressed`, as a
 * client that decodes. Content codings by `Accept-Encoding` with q-values,
 * `Vary`, a tag per coding and 304 for any of them (from the bytes, and
 * from an order's revision), HEAD like GET, the threshold, replays, and an
 * `If-Match` naming a coded tag.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { rawRequest, type RawAnswer } from '../support/http.ts';
import { bearer, startTestServer, type Account, type TestServer } from '../support/server.ts';
import { findProgram } from '../support/tools.ts';

let t: TestServer;
let admin: Account;
let customer: Account;

/** `path` of the test's server as node:http gets it: the body's bytes as they left the service. */
const raw = (path: string, headers: Record<string, string> = {}, method = 'GET', body?: string) =>
  rawRequest(`${t.url}${path}`, { headers, method, ...(body === undefined ? {} : { body }) });

function decoded(answer: RawAnswer): Buffer {
  const coding = answer.headers['content-encoding'];
  if (coding === 'gzip') return gunzipSync(answer.body);
  if (coding === 'br') return brotliDecompressSync(answer.body);
  assert.equal(coding, undefined);
  return answer.body;
}

const varyOf = (answer: RawAnswer) => String(answer.headers.vary ?? '').split(/\s*,\s*/);

before(async () => {
  t = await startTestServer();
  admin = await t.user('admin');
  customer = await t.user('customer');
});
after(async () => {
  await t.close();
});

/** A new order of the customer's, of `lines` items. */
async function newOrder(lines: number): Promise<number> {
  const items = Array.from({ length: lines }, (_, i) => ({ productId: i + 1, qty: i + 1 }));
  const response = await raw(
    '/v2/orders',
    { ...bearer(customer.token), 'content-type': 'application/json' },
    'POST',
    JSON.stringify({ items }),
  );
  assert.equal(response.status, 201, response.body.toString());
  const { id } = JSON.parse(response.body.toString()) as { id: number };
  // The admin reads it next: in a run with a read replica, once the standby has it (t.fetch waits for that; a
  // principal reads its own writes, not another's).
  await (await t.fetch(`/v2/orders/${id}`, { headers: bearer(admin.token) })).arrayBuffer();
  return id;
}

describe('content codings by Accept-Encoding', () => {
  const path = '/openapi.json';
  let identity: RawAnswer;
  before(async () => {
    identity = await raw(path);
  });

  it('sends identity without Accept-Encoding, with Vary: Accept-Encoding and the bytes tag', async () => {
    assert.equal(identity.status, 200);
    assert.equal(identity.headers['content-encoding'], undefined);
    assert.ok(varyOf(identity).includes('Accept-Encoding'));
    assert.equal(identity.headers['content-length'], String(identity.body.byteLength));
    assert.match(String(identity.headers.etag), /^"[\w-]{43}"$/);
  });

  for (const [field, coding] of [
    ['gzip', 'gzip'],
    ['br', 'br'],
    ['gzip, deflate, br', 'br'],
    ['br;q=0.2, gzip;q=0.8', 'gzip'],
    ['x-gzip', 'gzip'],
    ['*', 'br'],
    ['identity', undefined],
    ['gzip;q=0, br;q=0', undefined],
    ['*;q=0', undefined],
    ['deflate', undefined],
    ['gzip;q=0.5, identity', undefined],
    ['br;q=7', undefined],
  ] as const) {
    it(`Accept-Encoding: ${field} → ${coding ?? 'identity'}, the same document`, async () => {
      const answer = await raw(path, { 'accept-encoding': field });
      assert.equal(answer.status, 200);
      assert.equal(answer.headers['content-encoding'], coding);
      assert.equal(answer.headers['content-length'], String(answer.body.byteLength));
      assert.ok(varyOf(answer).includes('Accept-Encoding'));
      const tag = String(identity.headers.etag);
      assert.equal(answer.headers.etag, coding === undefined ? tag : `${tag.slice(0, -1)}-${coding}"`);
      assert.deepEqual(decoded(answer), identity.body);
      if (coding !== undefined) assert.ok(answer.body.byteLength < identity.body.byteLength / 5);
    });
  }

  it('HEAD carries the fields GET would, for each coding', async () => {
    for (const field of ['gzip', 'br', 'identity']) {
      const get = await raw(path, { 'accept-encoding': field });
      const head = await raw(path, { 'accept-encoding': field }, 'HEAD');
      assert.equal(head.status, 200);
      assert.equal(head.body.byteLength, 0);
      for (const name of ['content-encoding', 'content-length', 'etag', 'vary', 'content-type', 'cache-control'])
        assert.equal(head.headers[name], get.headers[name], `${field}: ${name}`);
    }
  });

  it('If-None-Match naming any coding’s tag is 304, with the tag of the coding asked for if sent', async () => {
    const tag = String(identity.headers.etag);
    const tags = { identity: tag, gzip: `${tag.slice(0, -1)}-gzip"`, br: `${tag.slice(0, -1)}-br"` };
    for (const held of Object.values(tags))
      for (const field of ['gzip', 'br', 'identity']) {
        const answer = await raw(path, { 'accept-encoding': field, 'if-none-match': held });
        assert.equal(answer.status, 304, `${held} with ${field}`);
        assert.equal(answer.headers.etag, held);
        assert.ok(varyOf(answer).includes('Accept-Encoding'));
        assert.equal(answer.headers['content-encoding'], undefined);
      }
    const both = await raw(path, { 'accept-encoding': 'br', 'if-none-match': `${tags.gzip}, ${tags.br}` });
    assert.equal(both.status, 304);
    assert.equal(both.headers.etag, tags.br);
    const other = await raw(path, { 'accept-encoding': 'gzip', 'if-none-match': `${tag.slice(0, -1)}-deflate"` });
    assert.equal(other.status, 200);
  });
});

describe('what is coded', () => {
  it('an answer under 1 KiB goes as it is, still with Vary: Accept-Encoding', async () => {
    const answer = await raw('/', { 'accept-encoding': 'gzip' });
    assert.equal(answer.status, 200);
    assert.ok(answer.body.byteLength < 1024, `${answer.body.byteLength} bytes`);
    assert.equal(answer.headers['content-encoding'], undefined);
    assert.ok(varyOf(answer).includes('Accept-Encoding'));
  });

  it('an image is never coded; a style sheet is', async () => {
    const png = await raw('/docs/favicon-32x32.png', { 'accept-encoding': 'gzip, br' });
    assert.equal(png.status, 200);
    assert.equal(png.headers['content-type'], 'image/png');
    assert.equal(png.headers['content-encoding'], undefined);
    const css = await raw('/docs/swagger-ui.css', { 'accept-encoding': 'gzip, br' });
    assert.equal(css.headers['content-encoding'], 'br');
  });

  it('a version 2 list of 100 orders, coded per request, decodes to the identity bytes', async () => {
    for (let i = 0; i < 5; i += 1) await newOrder(3);
    const path = '/v2/orders?pageSize=100&sort=id';
    const identity = await raw(path, bearer(admin.token));
    for (const coding of ['gzip', 'br']) {
      const answer = await raw(path, { ...bearer(admin.token), 'accept-encoding': coding });
      assert.equal(answer.status, 200);
      assert.equal(answer.headers['content-encoding'], coding);
      assert.deepEqual(decoded(answer), identity.body);
      assert.equal(answer.headers.etag, `${String(identity.headers.etag).slice(0, -1)}-${coding}"`);
      assert.deepEqual(varyOf(answer), ['Accept', 'Authorization', 'Accept-Encoding']);
      const again = await raw(path, {
        ...bearer(admin.token),
        'accept-encoding': coding,
        'if-none-match': String(answer.headers.etag),
      });
      assert.equal(again.status, 304);
      assert.equal(again.headers.etag, answer.headers.etag);
    }
  });

  it('an order of 12 items: a tag per coding, 304 from the revision, If-Match by a coded tag', async () => {
    const id = await newOrder(12);
    const path = `/v2/orders/${id}`;
    const identity = await raw(path, bearer(admin.token));
    assert.ok(identity.body.byteLength >= 1024, `${identity.body.byteLength} bytes`);
    const gzipped = await raw(path, { ...bearer(admin.token), 'accept-encoding': 'gzip' });
    assert.equal(gzipped.headers['content-encoding'], 'gzip');
    const tag = String(identity.headers.etag);
    assert.equal(gzipped.headers.etag, `${tag.slice(0, -1)}-gzip"`);
    const notModified = await raw(path, {
      ...bearer(admin.token),
      'accept-encoding': 'gzip',
      'if-none-match': String(gzipped.headers.etag),
    });
    assert.equal(notModified.status, 304);
    assert.equal(notModified.headers.etag, gzipped.headers.etag);
    const patched = await raw(
      path,
      {
        ...bearer(admin.token),
        'content-type': 'application/merge-patch+json',
        'if-match': String(gzipped.headers.etag),
        'accept-encoding': 'gzip',
      },
      'PATCH',
      '{"status":"cancelled"}',
    );
    assert.equal(patched.status, 200, decoded(patched).toString());
    assert.notEqual(patched.headers.etag, gzipped.headers.etag);
    const stale = await raw(
      path,
      {
        ...bearer(admin.token),
        'content-type': 'application/merge-patch+json',
        'if-match': String(gzipped.headers.etag),
      },
      'PATCH',
      '{"status":"cancelled"}',
    );
    assert.equal(stale.status, 412);
  });

  it('a replayed POST is coded for the client that asks again', async () => {
    const items = Array.from({ length: 12 }, (_, i) => ({ productId: i + 1, qty: i + 1 }));
    const headers = {
      ...bearer(customer.token),
      'content-type': 'application/json',
      'idempotency-key': `compression-${process.pid}-${Date.now()}`,
    };
    const first = await raw('/v2/orders', headers, 'POST', JSON.stringify({ items }));
    assert.equal(first.status, 201);
    assert.equal(first.headers['content-encoding'], undefined);
    const replay = await raw('/v2/orders', { ...headers, 'accept-encoding': 'br' }, 'POST', JSON.stringify({ items }));
    assert.equal(replay.status, 201);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.headers['content-encoding'], 'br');
    assert.deepEqual(decoded(replay), first.body);
  });
});

const CURL = findProgram(['curl'], ['--version']);

describe('curl --compressed', { skip: CURL === undefined && 'curl is not installed' }, () => {
  it('decodes the document to the bytes an identity request gets', async () => {
    const identity = await raw('/openapi.json');
    const folder = mkdtempSync(join(tmpdir(), 'orders-curl-'));
    try {
      // curl 7.88 crashes writing the header dump to a pipe (/dev/stderr under execFile): a file it is.
      await promisify(execFile)(CURL as string, [
        '--silent',
        '--show-error',
        '--compressed',
        '--dump-header',
        join(folder, 'headers'),
        '--output',
        join(folder, 'body'),
        `${t.url}/openapi.json`,
      ]);
      assert.match(readFileSync(join(folder, 'headers'), 'utf8'), /^content-encoding: (gzip|br)\r$/m);
      assert.deepEqual(readFileSync(join(folder, 'body')), identity.body);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
