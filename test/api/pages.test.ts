/**
 * The pages outside the API proper (contract §16): the index at `/` and the API
 * reference at `/docs` with its files, over HTTP; and `/docs` served by the
 * single executable, which has no node_modules. (The page in a browser:
 * test/api/browser-docs.test.ts; the problem pages: test/api/problem-pages.test.ts.)
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { etagOf } from '../../src/http/conditional.ts';
import { DOCS_CSP } from '../../src/pages/docs.ts';
import { rawRequest } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let t: TestServer;
before(async () => {
  t = await startTestServer();
});
after(async () => {
  await t.close();
});

// Not t.fetch: its contract check validates bodies as JSON against the
// OpenAPI document, which can name no media type but JSON for a route yet.
// Identity unless a test asks for a coding: fetch() would ask for gzip, and decode it (test/api/compression.test.ts).
const get = (path: string, headers: Record<string, string> = {}, method = 'GET') =>
  fetch(`${t.url}${path}`, { method, headers: { 'accept-encoding': 'identity', ...headers } });

/** GET of `path` exactly as written (fetch would resolve `/.` to `/`): status and problem type. */
async function rawGet(path: string): Promise<{ status: number; type: unknown }> {
  const { status, text } = await rawRequest(`${t.url}/`, { path });
  return { status, type: (JSON.parse(text) as { type?: unknown }).type };
}

const STRONG_TAG = /^"[A-Za-z0-9_-]{43}"$/;
const PACKAGE = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** The problem a refused request got: status, media type, no-store, and its type. */
async function assertProblem(response: Response, status: number, slug: string): Promise<Record<string, unknown>> {
  assert.equal(response.status, status);
  assert.equal(response.headers.get('content-type'), 'application/problem+json');
  assert.equal(response.headers.get('cache-control'), 'no-store');
  const body = (await response.json()) as Record<string, unknown>;
  assert.equal(body.type, `/problems/${slug}`);
  return body;
}

describe('GET /', () => {
  it('answers the JSON index without a token: public, cacheable, with a strong ETag', async () => {
    const response = await get('/');
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'application/json');
    assert.equal(response.headers.get('cache-control'), 'public, max-age=60');
    assert.match(response.headers.get('etag') ?? '', STRONG_TAG);
    assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(response.headers.get('vary'), 'Accept, Accept-Encoding');
    assert.deepEqual(await response.json(), {
      name: 'Orders service',
      links: {
        docs: {
          href: '/docs',
          type: 'text/html',
          title: 'Interactive API reference, rendered from the OpenAPI document',
        },
        openapi: { href: '/openapi.json', type: 'application/json', title: 'The OpenAPI 3.1 document of the API' },
        products: {
          href: '/v2/products',
          type: 'application/json',
          title: 'The product catalog, version 2 (no token needed)',
        },
        health: { href: '/healthz', type: 'application/json', title: 'Liveness: 200 while the process runs' },
      },
    });
  });

  it('links to pages that answer 200, without a token, in the media type it names', async () => {
    const index = (await (await get('/')).json()) as { links: Record<string, { href: string; type: string }> };
    for (const [name, link] of Object.entries(index.links)) {
      const response = await get(link.href);
      assert.equal(response.status, 200, name);
      assert.equal(response.headers.get('content-type')?.split(';')[0], link.type, name);
    }
  });

  it('answers a browser (Accept prefers text/html) an HTML page of the same links, JSON to any type', async () => {
    const browser = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';
    const page = await get('/', { accept: browser });
    assert.equal(page.status, 200);
    assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.equal(page.headers.get('vary'), 'Accept, Accept-Encoding');
    assert.equal(page.headers.get('cache-control'), 'public, max-age=60');
    assert.match(page.headers.get('content-security-policy') ?? '', /^default-src 'none'; style-src 'sha256-/);
    const text = await page.text();
    assert.match(text, /^<!DOCTYPE html>\n/);
    const links = [...text.matchAll(/<a href="([^"]+)">/g)].map((match) => match[1]);
    assert.deepEqual(links, ['/docs', '/openapi.json', '/v2/products', '/healthz']);
    const json = await get('/', { accept: '*/*' });
    assert.equal(json.headers.get('content-type'), 'application/json');
    assert.notEqual(json.headers.get('etag'), page.headers.get('etag'));
    // Each representation revalidates with its own tag.
    const etag = page.headers.get('etag') as string;
    const unchanged = await get('/', { accept: browser, 'if-none-match': etag });
    assert.equal(unchanged.status, 304);
    assert.equal(unchanged.headers.get('etag'), etag);
  });

  it('answers 406 when Accept allows neither JSON nor HTML', async () => {
    const refused = await get('/', { accept: 'image/png' });
    const body = await assertProblem(refused, 406, 'not-acceptable');
    assert.equal(refused.headers.get('vary'), 'Accept, Accept-Encoding');
    assert.equal(
      body.detail,
      'Nothing in Accept can be produced here; the index is available as application/json, text/html.',
    );
  });

  it('answers 304 to If-None-Match with its tag, and HEAD with the same fields and no body', async () => {
    const full = await get('/');
    const etag = full.headers.get('etag') as string;
    const unchanged = await get('/', { 'if-none-match': `W/${etag}, "other"` });
    assert.equal(unchanged.status, 304);
    assert.equal(unchanged.headers.get('etag'), etag);
    assert.equal(unchanged.headers.get('cache-control'), 'public, max-age=60');
    assert.equal(await unchanged.text(), '');
    const head = await get('/', {}, 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('etag'), etag);
    assert.equal(head.headers.get('content-length'), full.headers.get('content-length'));
    assert.equal(await head.text(), '');
  });

  it('refuses a malformed If-None-Match with 400 invalid-header', async () => {
    await assertProblem(await get('/', { 'if-none-match': 'abc' }), 400, 'invalid-header');
  });

  it('takes GET and HEAD only: OPTIONS lists them, POST is 405 with Allow', async () => {
    const options = await get('/', {}, 'OPTIONS');
    assert.equal(options.status, 204);
    assert.equal(options.headers.get('allow'), 'GET, HEAD, OPTIONS');
    const post = await get('/', {}, 'POST');
    await assertProblem(post, 405, 'method-not-allowed');
    assert.equal(post.headers.get('allow'), 'GET, HEAD, OPTIONS');
  });

  for (const path of ['/v1', '/v2', '/v1/', '/v2/', '//', '/.', '/..', '/%2e', '/%2E%2e', '/index']) {
    it(`leaves ${path} a 404: the root is no prefix`, async () => {
      assert.deepEqual(await rawGet(path), { status: 404, type: '/problems/not-found' });
    });
  }
});

describe('GET /docs', () => {
  it("answers the reference's HTML page without a token, with a same-origin-only Content-Security-Policy", async () => {
    const response = await get('/docs');
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.equal(
      response.headers.get('content-security-policy'),
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    assert.equal(response.headers.get('content-security-policy'), DOCS_CSP);
    assert.equal(response.headers.get('cache-control'), 'public, max-age=60');
    assert.match(response.headers.get('etag') ?? '', STRONG_TAG);
    assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
    const html = await response.text();
    assert.match(html, /^<!DOCTYPE html>\n<html lang="en">/);
    assert.ok(html.includes('<link rel="stylesheet" href="/docs/swagger-ui.css">'));
    assert.ok(html.includes('<link rel="icon" type="image/png" href="/docs/favicon-32x32.png">'));
    // Both scripts are files of this service; none is inline.
    assert.deepEqual(
      [...html.matchAll(/<script[^>]*>/g)].map((m) => m[0]),
      ['<script src="/docs/swagger-ui-bundle.js">', '<script src="/docs/init.js">'],
    );
    assert.ok(!/https?:\/\//.test(html), 'the page names no other host');
  });

  it('answers 304 to If-None-Match with its tag', async () => {
    const etag = (await get('/docs')).headers.get('etag') as string;
    const unchanged = await get('/docs', { 'if-none-match': etag });
    assert.equal(unchanged.status, 304);
    assert.equal(unchanged.headers.get('etag'), etag);
  });

  it('refuses a version prefix and a trailing slash', async () => {
    await assertProblem(await get('/v2/docs'), 404, 'not-found');
    await assertProblem(await get('/docs/'), 404, 'not-found');
  });
});

describe('GET /docs/{file}', () => {
  const files: [string, string][] = [
    ['swagger-ui.css', 'text/css; charset=utf-8'],
    ['swagger-ui-bundle.js', 'text/javascript; charset=utf-8'],
    ['favicon-32x32.png', 'image/png'],
  ];
  for (const [name, type] of files) {
    it(`serves ${name} byte for byte from installed swagger-ui-dist as ${type}, cacheable, strong ETag`, async () => {
      const expected = readFileSync(join(PACKAGE, name));
      const response = await get(`/docs/${name}`);
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('content-type'), type);
      assert.equal(response.headers.get('content-length'), String(expected.byteLength));
      assert.equal(response.headers.get('cache-control'), 'public, max-age=60');
      assert.equal(response.headers.get('etag'), etagOf(expected));
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
      assert.ok(Buffer.from(await response.arrayBuffer()).equals(expected));
      const unchanged = await get(`/docs/${name}`, { 'if-none-match': etagOf(expected) });
      assert.equal(unchanged.status, 304);
      assert.equal(await unchanged.text(), '');
    });
  }

  it('serves init.js, which starts Swagger UI on /openapi.json, no validator and no query configuration', async () => {
    const response = await get('/docs/init.js');
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'text/javascript; charset=utf-8');
    assert.equal(response.headers.get('cache-control'), 'public, max-age=60');
    const script = await response.text();
    assert.ok(script.includes("url: '/openapi.json'"));
    assert.ok(script.includes('validatorUrl: null'));
    assert.ok(script.includes('queryConfigEnabled: false'));
    assert.ok(!/https?:\/\//.test(script));
  });

  it('answers HEAD with the length and no body', async () => {
    const head = await get('/docs/swagger-ui-bundle.js', {}, 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(
      head.headers.get('content-length'),
      String(readFileSync(join(PACKAGE, 'swagger-ui-bundle.js')).byteLength),
    );
    assert.equal(await head.text(), '');
  });

  // Only the listed files: nothing else of the package, nor of the disk.
  for (const path of [
    '/docs/index.html',
    '/docs/swagger-ui.css.map',
    '/docs/package.json',
    '/docs/swagger-initializer.js',
    '/docs/oauth2-redirect.html',
    '/docs/SWAGGER-UI.CSS',
    '/docs/..',
    '/docs/../openapi.json',
    '/docs/%2e%2e%2fpackage.json',
    '/docs/swagger-ui.css/x',
    '/v1/docs/init.js',
  ]) {
    it(`answers 404 for ${path}`, async () => {
      assert.deepEqual(await rawGet(path), { status: 404, type: '/problems/not-found' });
    });
  }
});

describe('the OpenAPI document', () => {
  it('documents /, /docs, /docs/{file} and /problems/{slug}, each with a summary and description, public', async () => {
    const document = (await (await get('/openapi.json')).json()) as {
      paths: Record<
        string,
        Record<
          string,
          { summary?: string; description?: string; security?: unknown[]; responses: Record<string, unknown> }
        >
      >;
    };
    for (const path of ['/', '/docs', '/docs/{file}', '/problems/{slug}']) {
      for (const method of ['get', 'head']) {
        const operation = document.paths[path]?.[method];
        assert.ok(operation, `${method} ${path}`);
        assert.ok((operation.summary ?? '').length > 10, `${method} ${path} summary`);
        assert.ok((operation.description ?? '').length > 40, `${method} ${path} description`);
        assert.deepEqual(operation.security, []);
        assert.ok(operation.responses['200']);
      }
    }
    assert.ok(document.paths['/problems/{slug}']?.get?.responses['406']);
    assert.ok(document.paths['/problems/{slug}']?.get?.responses['404']);
    assert.equal(document.paths['/v1/docs'], undefined);
  });
});

const EXECUTABLE = process.env.ORDERS_EXECUTABLE ?? new URL('../../dist/orders', import.meta.url).pathname;

describe('the single executable', {
  skip: existsSync(EXECUTABLE) ? false : `${EXECUTABLE} is missing: make build makes it (make test runs make build)`,
}, () => {
  it('serves /docs and its files from its own assets, alone in an empty folder: no node, no node_modules', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'orders-docs-'));
    const emptyBin = mkdtempSync(join(tmpdir(), 'orders-docs-bin-'));
    const program = join(folder, 'orders');
    copyFileSync(EXECUTABLE, program);
    chmodSync(program, 0o755);
    const child = spawn(program, [], {
      cwd: folder,
      env: { PATH: emptyBin, HOME: folder, PORT: '0', DATABASE_URL: 'memory:', LOG_LEVEL: 'warn' },
    });
    try {
      child.stdout.resume();
      let stderr = '';
      const url = await new Promise<string>((resolve, reject) => {
        child.stderr.on('data', (d: Buffer) => {
          stderr += d.toString();
          const match = /listening on (http:\/\/\S+)/.exec(stderr);
          if (match) resolve(match[1] as string);
        });
        child.once('exit', (code) => reject(new Error(`exited with ${code} before listening: ${stderr}`)));
      });
      const page = await fetch(`${url}/docs`);
      assert.equal(page.status, 200);
      assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
      for (const name of ['swagger-ui-bundle.js', 'swagger-ui.css', 'favicon-32x32.png']) {
        const response = await fetch(`${url}/docs/${name}`);
        assert.equal(response.status, 200, name);
        assert.ok(Buffer.from(await response.arrayBuffer()).equals(readFileSync(join(PACKAGE, name))), name);
      }
      assert.equal((await fetch(`${url}/docs/init.js`)).status, 200);
      assert.equal((await fetch(`${url}/problems/validation`, { headers: { accept: 'text/markdown' } })).status, 200);
      assert.equal((await fetch(`${url}/`)).status, 200);
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = once(child, 'exit');
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(folder, { recursive: true, force: true });
      rmSync(emptyBin, { recursive: true, force: true });
    }
  });
});
