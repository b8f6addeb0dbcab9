/**
 * CORS in a real browser (contract §16): a page served from another origin on
 * loopback calls the API with fetch. From an origin in CORS_ORIGINS the
 * browser's preflight is answered, and the script may send a bearer token,
 * an Idempotency-Key and If-None-Match, and read ETag, Location and the
 * other exposed fields; from an origin not listed, the browser refuses
 * (fetch rejects with a TypeError) and the request itself is never sent.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { BROWSER_SKIP, isLoopback, launchBrowser, watchedPage, type WatchedPage } from '../support/browser.ts';
import { startTestServer, type Account, type TestServer } from '../support/server.ts';

/** What the page's script reports of one fetch: the answer as a script sees it, or the error it rejected with. */
type Outcome =
  | { readonly status: number; readonly headers: Readonly<Record<string, string | null>>; readonly body: string }
  | { readonly error: string; readonly message: string };

/** The fields the page reads from every answer; `vary` is neither safelisted nor exposed, so a script never sees it. */
const READ = ['etag', 'location', 'x-request-id', 'idempotent-replayed', 'content-type', 'vary'];

// The page's own script: window.cors.request(url, init) runs one fetch and reports it.
const PAGE = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Another origin</title></head>
<body><p>A page of another origin that calls the Orders API.</p>
<script>
window.cors = {
  async request(url, init) {
    try {
      const response = await fetch(url, init);
      const headers = {};
      for (const name of ${JSON.stringify(READ)}) headers[name] = response.headers.get(name);
      return { status: response.status, headers, body: await response.text() };
    } catch (error) {
      return { error: error.name, message: error.message };
    }
  },
};
</script>
</body></html>
`;

/** A tiny server of PAGE on a free loopback port: another origin than the API's. */
async function pageServer(): Promise<{ server: Server; origin: string }> {
  const server = createServer((req, res) => {
    // The browser asks for /favicon.ico too: no icon, and no 404 in the console.
    if (req.url !== '/') {
      res.writeHead(req.url === '/favicon.ico' ? 204 : 404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** `init` run by the page at `w` against `url`. */
function request(
  w: WatchedPage,
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Outcome> {
  return w.page.evaluate(
    ([u, i]) =>
      (globalThis as unknown as { cors: { request(url: string, init: object): Promise<Outcome> } }).cors.request(u, i),
    [url, init] as const,
  );
}

function answered(outcome: Outcome): Extract<Outcome, { status: number }> {
  assert.ok('status' in outcome, `fetch rejected: ${JSON.stringify(outcome)}`);
  return outcome;
}

describe('CORS in headless chromium', { skip: BROWSER_SKIP }, () => {
  let listed: { server: Server; origin: string };
  let unlisted: { server: Server; origin: string };
  let t: TestServer;
  let browser: Browser;
  let customer: Account;
  const pages: WatchedPage[] = [];

  before(async () => {
    [listed, unlisted, browser] = await Promise.all([pageServer(), pageServer(), launchBrowser()]);
    t = await startTestServer({ CORS_ORIGINS: listed.origin });
    customer = await t.user('customer');
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    for (const s of [listed, unlisted]) if (s) await new Promise((resolve) => s.server.close(resolve));
  });

  /** A page of `origin`, loaded. */
  async function pageOf(origin: string): Promise<WatchedPage> {
    // No interception: Playwright would answer the preflights itself (test/support/browser.ts).
    const w = await watchedPage(browser, { intercept: false });
    pages.push(w);
    assert.equal((await w.page.goto(`${origin}/`))?.status(), 200);
    return w;
  }

  /** The server's log lines of `method` on `path`, as [method, status]. */
  const logged = (method: string, path: string) =>
    t.logs.filter((l) => l.message === 'request' && l.method === method && l.path === path).map((l) => l.status);

  describe('from an origin listed in CORS_ORIGINS', () => {
    let w: WatchedPage;
    before(async () => {
      w = await pageOf(listed.origin);
    });

    it('sends a bearer token after a preflight the service answers, and reads ETag', async () => {
      const list = answered(
        await request(w, `${t.url}/v2/orders`, { headers: { authorization: `Bearer ${customer.token}` } }),
      );
      assert.equal(list.status, 200);
      assert.match(list.headers.etag ?? '', /^"[A-Za-z0-9_-]{43}"$/);
      assert.match(list.headers['x-request-id'] ?? '', /^[0-9a-f-]{36}$/);
      assert.equal(list.headers['content-type'], 'application/json');
      assert.equal(list.headers.vary, null); // not exposed: the browser hides it
      assert.deepEqual(JSON.parse(list.body).data, []);
      // Authorization is no CORS-safelisted field: the browser asked first.
      assert.deepEqual(logged('OPTIONS', '/v2/orders'), [204]);
      assert.deepEqual(logged('GET', '/v2/orders'), [200]);
    });

    it('sends If-None-Match with that ETag and gets the 304', async () => {
      const first = answered(
        await request(w, `${t.url}/v2/orders`, { headers: { authorization: `Bearer ${customer.token}` } }),
      );
      const again = answered(
        await request(w, `${t.url}/v2/orders`, {
          headers: { authorization: `Bearer ${customer.token}`, 'if-none-match': first.headers.etag as string },
        }),
      );
      assert.equal(again.status, 304);
      assert.equal(again.headers.etag, first.headers.etag);
      assert.equal(again.body, '');
    });

    it('reads Location and ETag of a POST with an Idempotency-Key, and Idempotent-Replayed on its repeat', async () => {
      const init = {
        method: 'POST',
        headers: {
          authorization: `Bearer ${customer.token}`,
          'content-type': 'application/json',
          'idempotency-key': 'browser-order-1',
        },
        body: JSON.stringify({ items: [{ productId: 1, qty: 2 }] }),
      };
      const created = answered(await request(w, `${t.url}/v2/orders`, init));
      assert.equal(created.status, 201);
      const id = JSON.parse(created.body).id as number;
      assert.equal(created.headers.location, `/v2/orders/${id}`);
      assert.match(created.headers.etag ?? '', /^"o\d+r\d+v2\.json\.f[0-9a-z]{7}"$/);
      assert.equal(created.headers['idempotent-replayed'], null);
      const replayed = answered(await request(w, `${t.url}/v2/orders`, init));
      assert.equal(replayed.status, 201);
      assert.equal(replayed.headers['idempotent-replayed'], 'true');
      assert.equal(replayed.headers.location, created.headers.location);
      // The Location, resolved against the API, is the order.
      const order = answered(
        await request(w, new URL(created.headers.location as string, t.url).href, {
          headers: { authorization: `Bearer ${customer.token}` },
        }),
      );
      assert.equal(order.status, 200);
      assert.equal(JSON.parse(order.body).id, id);
      assert.equal(order.headers.etag, created.headers.etag);
    });

    it('reads an error answer too (a problem is no CORS failure)', async () => {
      const refused = answered(
        await request(w, `${t.url}/v2/orders/999999`, { headers: { authorization: `Bearer ${customer.token}` } }),
      );
      assert.equal(refused.status, 404);
      assert.equal(refused.headers['content-type'], 'application/problem+json');
      assert.equal(JSON.parse(refused.body).type, '/problems/not-found');
    });
  });

  describe('from an origin not listed', () => {
    let w: WatchedPage;
    before(async () => {
      w = await pageOf(unlisted.origin);
    });

    it('is refused by the browser: fetch with a bearer token rejects with a TypeError, no GET is sent', async () => {
      const sent = logged('GET', '/v2/users').length;
      const outcome = await request(w, `${t.url}/v2/users`, { headers: { authorization: `Bearer ${customer.token}` } });
      assert.equal('error' in outcome && outcome.error, 'TypeError');
      // The preflight was answered, without CORS fields; the request itself never left the browser.
      assert.deepEqual(logged('OPTIONS', '/v2/users'), [204]);
      assert.equal(logged('GET', '/v2/users').length, sent);
    });

    it('cannot read even a public, simple GET: fetch rejects with a TypeError', async () => {
      const outcome = await request(w, `${t.url}/v2/products`);
      assert.equal('error' in outcome && outcome.error, 'TypeError');
      assert.deepEqual(logged('GET', '/v2/products'), [200]); // sent (no preflight needed), but not readable
    });
  });

  it('logs in the console only the one 404 and, on the other origin, the CORS refusals; nothing left 127.0.0.1', () => {
    for (const w of pages) {
      assert.deepEqual(w.blocked, []);
      assert.deepEqual(
        w.requests.filter((r) => !isLoopback(r.url)),
        [],
      );
    }
    // Browsers log every 4xx a page receives; that is the only error of the listed origin's page.
    assert.deepEqual(pages[0]?.errors, [
      'console: Failed to load resource: the server responded with a status of 404 (Not Found)',
    ]);
    // The other origin's: the browser's two refusals, each with its failed load.
    const refusals = (pages[1]?.errors ?? []).filter((e) => e.includes('blocked by CORS policy'));
    assert.equal(refusals.length, 2);
    assert.ok(
      refusals[0]?.startsWith(
        `console: Access to fetch at '${t.url}/v2/users' from origin '${unlisted.origin}' ` +
          "has been blocked by CORS policy: Response to preflight request doesn't pass access control check",
      ),
      refusals[0],
    );
    assert.ok(
      refusals[1]?.startsWith(
        `console: Access to fetch at '${t.url}/v2/products' from origin '${unlisted.origin}' ` +
          "has been blocked by CORS policy: No 'Access-Control-Allow-Origin' header",
      ),
      refusals[1],
    );
    assert.deepEqual(
      (pages[1]?.errors ?? []).filter((e) => !refusals.includes(e)),
      ['console: Failed to load resource: net::ERR_FAILED', 'console: Failed to load resource: net::ERR_FAILED'],
    );
  });
});
