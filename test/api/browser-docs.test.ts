/**
 * GET /docs in a real browser (contract §16): headless chromium renders the API
 * reference from /openapi.json, "Try it out" runs a request against the
 * service, nothing fails in the console, and no request leaves 127.0.0.1
 * (any other host is blocked, and would be listed). And a problem page
 * (GET /problems/<slug>) renders with its style, which its
 * Content-Security-Policy allows by hash, and nothing else.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { BROWSER_SKIP, isLoopback, launchBrowser, watchedPage, type WatchedPage } from '../support/browser.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

describe('GET /docs in headless chromium', { skip: BROWSER_SKIP }, () => {
  let t: TestServer;
  let browser: Browser;
  let w: WatchedPage;
  before(async () => {
    [t, browser] = await Promise.all([startTestServer(), launchBrowser()]);
    w = await watchedPage(browser);
    const response = await w.page.goto(`${t.url}/docs`);
    assert.equal(response?.status(), 200);
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  // Swagger UI's id of an operation block: operations-<tag>-<operationId>.
  const products = '#operations-v2-getV2Products';

  it('renders the operations of /openapi.json, GET /v2/products among them', async () => {
    const block = w.page.locator(products);
    await block.waitFor({ state: 'visible' });
    assert.equal((await block.locator('.opblock-summary-method').textContent())?.trim(), 'GET');
    assert.equal(await block.locator('.opblock-summary-path').getAttribute('data-path'), '/v2/products');
    assert.ok(await w.page.locator('#operations-v2-postV2Orders').isVisible());
    assert.ok(await w.page.locator('#operations-v1-getV1OrdersId').isVisible());
  });

  it('runs "Try it out" → "Execute" on GET /v2/products and shows the 200', async () => {
    const block = w.page.locator(products);
    await block.locator('.opblock-summary-control').click();
    await block.locator('button.try-out__btn').click();
    const [answer] = await Promise.all([
      w.page.waitForResponse((r) => new URL(r.url()).pathname === '/v2/products'),
      block.locator('button.execute').click(),
    ]);
    assert.equal(answer.status(), 200);
    assert.equal(new URL(answer.url()).origin, t.url);
    const status = block.locator('.live-responses-table .response .response-col_status').first();
    await status.waitFor({ state: 'visible' });
    assert.equal((await status.textContent())?.trim(), '200');
    const shown = await block.locator('.live-responses-table .response-col_description pre').first().textContent();
    assert.match(shown ?? '', /"pageCount": 2/);
  });

  it('logs no error in the console and throws none', () => {
    assert.deepEqual(w.errors, []);
  });

  it('requests nothing but 127.0.0.1, and only what the service serves', () => {
    assert.deepEqual(w.blocked, []);
    const offHost = w.requests.filter((r) => !isLoopback(r.url));
    assert.deepEqual(offHost, []);
    const paths = [
      ...new Set(w.requests.filter((r) => r.url.startsWith(t.url)).map((r) => new URL(r.url).pathname)),
    ].sort();
    assert.deepEqual(paths, [
      '/docs',
      '/docs/favicon-32x32.png',
      '/docs/init.js',
      '/docs/swagger-ui-bundle.js',
      '/docs/swagger-ui.css',
      '/openapi.json',
      '/v2/products',
    ]);
  });

  it('gets the page, its scripts and the document compressed, and renders them (contract §16)', async () => {
    const fresh = await watchedPage(browser);
    const codings = new Map<string, string | undefined>();
    fresh.page.on('response', (response) => {
      codings.set(new URL(response.url()).pathname, response.headers()['content-encoding']);
    });
    const response = await fresh.page.goto(`${t.url}/docs`);
    assert.equal(response?.status(), 200);
    await fresh.page.locator('.opblock').first().waitFor();
    for (const path of ['/docs/swagger-ui-bundle.js', '/docs/swagger-ui.css', '/openapi.json'])
      assert.match(String(codings.get(path)), /^(gzip|br)$/, `${path}: ${codings.get(path)}`);
    // An image is sent as it is, and so is the page itself: under 1 KiB.
    assert.equal(codings.get('/docs/favicon-32x32.png'), undefined);
    assert.equal(codings.get('/docs'), undefined);
    assert.deepEqual(fresh.errors, []);
    await fresh.context.close();
  });

  it('shows a problem page as HTML with its own style, which its Content-Security-Policy allows', async () => {
    const problem = await watchedPage(browser);
    const response = await problem.page.goto(`${t.url}/problems/order-not-payable`);
    assert.equal(response?.status(), 200);
    assert.equal(response?.headers()['content-type'], 'text/html; charset=utf-8');
    assert.equal(await problem.page.title(), 'Order cannot be paid (409): Orders service problem type');
    assert.equal(await problem.page.locator('h1').textContent(), 'Order cannot be paid');
    assert.deepEqual(await problem.page.locator('h2').allTextContents(), [
      'What it means',
      'When it happens',
      'What to do',
    ]);
    // The inline style applied (42rem at 16px): its hash in the policy is right.
    assert.equal(
      await problem.page
        .locator('body')
        .evaluate(
          (body) =>
            (globalThis as unknown as { getComputedStyle(e: unknown): { maxWidth: string } }).getComputedStyle(body)
              .maxWidth,
        ),
      '672px',
    );
    assert.deepEqual(problem.errors, []);
    assert.deepEqual(
      problem.requests.map((r) => new URL(r.url).pathname).filter((p) => p !== '/favicon.ico'),
      ['/problems/order-not-payable'],
    );
    await problem.context.close();
  });
});
