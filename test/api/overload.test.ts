/**
 * Overload through the pipeline (contract §14): requests past the admission limit wait, a standing queue's
 * waiters are refused with 503 and Retry-After, a body is read before its request takes a turn, and health,
 * readiness and metrics answer while every turn is held.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Authenticator } from '../../src/auth/authenticator.ts';
import { createLogger } from '../../src/base/logger.ts';
import { loadConfig } from '../../src/config/config.ts';
import type { Database } from '../../src/db/database.ts';
import { HttpError } from '../../src/http/problem.ts';
import type { RouteSpec, Services } from '../../src/pipeline/context.ts';
import { createApp } from '../../src/pipeline/pipeline.ts';

const authenticator: Authenticator = {
  async authenticate() {
    throw new HttpError(401, 'unauthorized');
  },
};
const services: Services = {
  config: loadConfig({}),
  db: {} as Database,
  log: createLogger('warn', () => {}),
  authenticator,
  cursorKeys: { keys: [new Uint8Array(32)], reload: async () => {}, stop: () => {} },
  // Two turns, never more or fewer; a queue standing after 50 ms, whose waiters wait at most 5 ms then.
  tuning: { admission: { initialLimit: 2, minLimit: 2, maxLimit: 2, intervalMs: 50, targetMs: 5 } },
};

/** The handlers of /held: each waits until the test lets it go. */
let held: (() => void)[] = [];
let started = 0;
const doc = { summary: 'test route', success: { status: 200 } } as const;
const routes: RouteSpec[] = [
  {
    method: 'GET',
    pattern: '/held',
    auth: 'public',
    doc,
    handler: async () => {
      started += 1;
      await new Promise<void>((resolve) => held.push(resolve));
      return new Response('done');
    },
  },
  {
    method: 'POST',
    pattern: '/held',
    auth: 'public',
    doc,
    handler: async (ctx) => {
      started += 1;
      await new Promise<void>((resolve) => held.push(resolve));
      return new Response(ctx.body);
    },
  },
  {
    method: 'GET',
    pattern: '/healthz',
    auth: 'public',
    doc,
    versioned: false,
    overload: 'exempt',
    handler: async () => new Response('ok'),
  },
];
const app = createApp(services, routes);
const call = (path: string, init?: RequestInit) =>
  app(new Request(`http://localhost${path}`, init), { remoteAddress: '127.0.0.1' });

/** Resolves once `n` handlers have started. */
async function handlersStarted(n: number): Promise<void> {
  while (started < n) await new Promise((resolve) => setImmediate(resolve));
}

describe('overload (contract §14)', () => {
  it('holds requests past the limit, refuses a standing queue with 503 and Retry-After, serves health', async () => {
    held = [];
    started = 0;
    const first = [call('/held'), call('/held')];
    await handlersStarted(2);
    const waiting = Array.from({ length: 5 }, () => call('/held'));
    // Every turn held: the exempt route answers all the same.
    const health = await call('/healthz');
    assert.equal(health.status, 200);
    // No turn comes back: past the interval the queue stands, and each waiter is refused.
    const refused = await Promise.all(waiting);
    for (const response of refused) {
      assert.equal(response.status, 503);
      assert.equal(response.headers.get('retry-after'), '1');
      assert.equal(response.headers.get('content-type'), 'application/problem+json');
      const problem = (await response.json()) as { type: string; detail: string };
      assert.match(problem.type, /\/problems\/unavailable$/);
      assert.equal(problem.detail, 'The service is at capacity; try again shortly.');
    }
    assert.equal(started, 2, 'no refused request reached its handler');
    for (const release of held) release();
    const done = await Promise.all(first);
    assert.deepEqual(await Promise.all(done.map((r) => r.text())), ['done', 'done']);
  });

  it('gives a turn that comes back to the one waiting', async () => {
    held = [];
    started = 0;
    const first = [call('/held'), call('/held')];
    await handlersStarted(2);
    const third = call('/held');
    held.shift()?.();
    await handlersStarted(3);
    for (const release of held) release();
    assert.deepEqual(
      (await Promise.all([...first, third])).map((r) => r.status),
      [200, 200, 200],
    );
  });

  it('reads a body before its request waits for a turn', async () => {
    held = [];
    started = 0;
    const first = [call('/held'), call('/held')];
    await handlersStarted(2);
    // A body that does not end: its request takes no turn, so the next GET gets the one freed.
    let body: ReadableStreamDefaultController<Uint8Array> | undefined;
    const stalled = call('/held', {
      method: 'POST',
      body: new ReadableStream<Uint8Array>({
        start(controller) {
          body = controller;
        },
      }),
      headers: { 'content-type': 'text/plain' },
      duplex: 'half',
    } as RequestInit);
    held.shift()?.();
    const next = call('/held');
    await handlersStarted(3);
    for (const release of held.splice(0)) release();
    assert.deepEqual(
      (await Promise.all([...first, next])).map((r) => r.status),
      [200, 200, 200],
    );
    assert.equal(started, 3, 'the POST has not reached its handler');
    // Its body ends: now it takes a turn.
    body?.enqueue(new TextEncoder().encode('late'));
    body?.close();
    await handlersStarted(4);
    held.shift()?.();
    const response = await stalled;
    assert.equal(response.status, 200);
    assert.equal(await response.text(), 'late');
  });
});
