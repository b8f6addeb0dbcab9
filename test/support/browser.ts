/**
 * Headless Debian chromium, driven by playwright-core, for the browser tests
 * (test/api/browser-*.test.ts). CI installs chromium at /usr/bin/chromium; where
 * it is missing the tests are skipped with `BROWSER_SKIP` as the reason.
 *
 * Nothing but 127.0.0.1 is reachable, twice over, so that a test proves a
 * page stays on loopback rather than depending on the network being down:
 * the browser resolves no other name or address (`--host-resolver-rules`),
 * and a watched page records every request it makes and, by default,
 * aborts (and lists) any to another host before it is sent.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Why the browser tests are skipped (`false`: they run); for `describe(…, { skip })`. */
export const BROWSER_SKIP: string | false = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium) to run the browser tests`;

/** The only host a test page may reach. */
export const LOOPBACK = '127.0.0.1';

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  // Every other host name, and every other IP literal, fails to resolve (net::ERR_NAME_NOT_RESOLVED).
  `--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE ${LOOPBACK}`,
];

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS });
}

export interface WatchedPage {
  readonly context: BrowserContext;
  readonly page: Page;
  /** Every request the page made (or tried to make), in order: method and URL. */
  readonly requests: { readonly method: string; readonly url: string }[];
  /** Every URL that was refused because its host was not 127.0.0.1. */
  readonly blocked: string[];
  /** The console's errors and the page's uncaught exceptions. */
  readonly errors: string[];
}

export interface WatchOptions {
  /**
   * Abort requests to other hosts through Playwright's request interception
   * (default `true`). `false` for CORS tests: while it intercepts, Playwright
   * answers every CORS preflight itself, allowing any origin, so the
   * service's own answer would never be seen (the host resolver rules still
   * keep the page on loopback).
   */
  readonly intercept?: boolean;
}

/**
 * A new page in a fresh context (no shared cache or storage) that records
 * requests and errors and blocks other hosts.
 */
export async function watchedPage(browser: Browser, options: WatchOptions = {}): Promise<WatchedPage> {
  const context = await browser.newContext({ serviceWorkers: 'block' });
  const requests: { method: string; url: string }[] = [];
  const blocked: string[] = [];
  const errors: string[] = [];
  if (options.intercept ?? true) {
    await context.route(
      () => true,
      async (route) => {
        const url = route.request().url();
        if (isLoopback(url)) return route.continue();
        blocked.push(url);
        return route.abort('blockedbyclient');
      },
    );
  }
  const page = await context.newPage();
  page.on('request', (request) => requests.push({ method: request.method(), url: request.url() }));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => errors.push(`page: ${error.message}`));
  return { context, page, requests, blocked, errors };
}

/** Whether `url` is on 127.0.0.1 (`data:` and `blob:` URLs leave nothing: they count as local). */
export function isLoopback(url: string): boolean {
  const { protocol, hostname } = new URL(url);
  if (protocol === 'data:' || protocol === 'blob:') return true;
  return hostname === LOOPBACK;
}
