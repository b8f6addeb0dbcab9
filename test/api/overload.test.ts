/**
 * Overload through the pipeline (contract §14): past the database's turns a request is refused at once with 503 and
 * Retry-After, none of its handler run; a body is read before its request takes a turn; while the event loop is
 * overloaded a request is refused before anything else; a request whose client has gone is not served; health,
 * readiness and metrics answer throughout. Each refusal is logged and counted by what refused it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Authenticator } from '../../src/auth/authenticator.ts';
import { createLogger } from '../../src/base/logger.ts';
import { loadConfig } from '../../src/config/config.ts';
import type { Database } from '../../src/db/database.ts';
import type { ClientInfo } from '../../src/http/client-info.ts';
import type { LoopWatch } from '../../src/http/loop-watch.ts';
import { HttpError } from '../../src/http/problem.ts';
import { createHttpMetrics } from '../../src/metrics/http-metrics.ts';
import type { RouteSpec, Services, Tuning } from '../../src/pipeline/context.ts';
import { createApp } from '../../src/pipeline/pipeline.ts';
import { bearer, startTestServer } from '../support/server.ts';

const authenticator: Authenticator = {
  async authenticate() {
    throw new HttpError(401, 'unauthorized');
  },
};

/** A loop watch the test sets: refusing or not. */
const loop = { refusing: false };
const watch: LoopWatch = {
  saturated: () => loop.refusing,
  get overloaded() {
    return loop.refusing;
  },
  stop() {},
};

/** An app over `routes` with two turns whatever the rate, and the loop watch above; its log lines and metrics. */
function appWith(tuning: Tuning = { admission: { floor: 2, targetMs: 0 }, loopWatch: watch }) {
  const lines: Record<string, unknown>[] = [];
  const metrics = createHttpMetrics();
  const services: Services = {
    config: loadConfig({}),
    db: {} as Database,
    log: createLogger('info', (line) => lines.push(JSON.parse(line) as Record<string, unknown>)),
    authenticator,
    cursorKeys: { keys: [new Uint8Array(32)], reload: async () => {}, stop: () => {} },
    metrics,
    tuning,
  };
  const app = createApp(services, routes);
  const call = (path: string, init?: RequestInit, client: ClientInfo = { remoteAddress: '127.0.0.1' }) =>
    app(new Request(`http://localhost${path}`, init), client);
  const refusals = () => metrics.snapshot().counters.orders_overload_refused_total;
  return { call, lines, refusals };
}

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
/** Resolves once `n` handlers have started. */
async function handlersStarted(n: number): Promise<void> {
  while (started < n) await new Promise((resolve) => setImmediate(resolve));
}

/** Asserts `response` is the overload's 503. */
async function assertOverloaded(response: Response): Promise<void> {
  assert.equal(response.status, 503);
  assert.equal(response.headers.get('retry-after'), '1');
  assert.equal(response.headers.get('content-type'), 'application/problem+json');
  const problem = (await response.json()) as { type: string; status: number; detail: string; requestId: string };
  assert.match(problem.type, /\/problems\/unavailable$/);
  assert.equal(problem.status, 503);
  assert.equal(problem.detail, 'The service is at capacity; try again shortly.');
  assert.equal(problem.requestId, response.headers.get('x-request-id'));
}

describe('overload (contract §14)', () => {
  it('refuses a request past the turns at once, none of its handler run; serves health meanwhile', async () => {
    held = [];
    started = 0;
    const { call, lines, refusals } = appWith();
    const first = [call('/held'), call('/held')];
    await handlersStarted(2);
    // Every turn held: the third is refused without waiting for one.
    await assertOverloaded(await call('/held'));
    assert.equal(started, 2, 'the refused request never reached its handler');
    assert.equal((await call('/healthz')).status, 200);
    assert.deepEqual(refusals(), { '{by="loop"}': 0, '{by="turns"}': 1 });
    const refused = lines.filter((line) => line.message === 'request' && line.status === 503);
    assert.equal(refused.length, 1, 'a refusal has its log line');
    for (const release of held) release();
    const done = await Promise.all(first);
    assert.deepEqual(await Promise.all(done.map((r) => r.text())), ['done', 'done']);
    // The turns came back: the next request is served.
    const next = call('/held');
    await handlersStarted(3);
    held.at(-1)?.();
    assert.equal((await next).status, 200);
  });

  it('reads a body before its request takes a turn', async () => {
    held = [];
    started = 0;
    const { call } = appWith();
    const first = call('/held');
    await handlersStarted(1);
    // A body that does not end: its request takes no turn, so the next GET gets the second.
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
    const second = call('/held');
    await handlersStarted(2);
    assert.equal(started, 2, 'the POST has not reached its handler');
    for (const release of held.splice(0)) release();
    assert.deepEqual(
      (await Promise.all([first, second])).map((r) => r.status),
      [200, 200],
    );
    // Its body ends: now it takes a turn.
    body?.enqueue(new TextEncoder().encode('late'));
    body?.close();
    await handlersStarted(3);
    held.shift()?.();
    const response = await stalled;
    assert.equal(response.status, 200);
    assert.equal(await response.text(), 'late');
  });

  it('refuses every request while the loop is overloaded, before its route runs; health is served', async () => {
    held = [];
    started = 0;
    const { call, refusals } = appWith();
    loop.refusing = true;
    try {
      await assertOverloaded(await call('/held'));
      await assertOverloaded(
        await call('/held', { method: 'POST', body: 'x', headers: { 'content-type': 'text/plain' } }),
      );
      assert.equal((await call('/healthz')).status, 200);
      assert.equal(started, 0);
      assert.deepEqual(refusals(), { '{by="loop"}': 2, '{by="turns"}': 0 });
    } finally {
      loop.refusing = false;
    }
  });

  it('refuses the client that sent more than its share while the loop is saturated, serves others', async () => {
    held = [];
    started = 0;
    const { call, refusals } = appWith({ admission: { floor: 10, targetMs: 0 }, loopWatch: watch });
    const from = (remoteAddress: string): ClientInfo => ({ remoteAddress });
    // One client has sent three requests when the loop saturates.
    const flood = [1, 2, 3].map(() => call('/held', undefined, from('10.0.0.1')));
    await handlersStarted(3);
    loop.refusing = true;
    try {
      // Another's first: one of four from two clients, less than the average: served.
      const other = call('/held', undefined, from('10.0.0.2'));
      await handlersStarted(4);
      // The first client's fourth of five: past the average: refused, however its others fared.
      await assertOverloaded(await call('/held', undefined, from('10.0.0.1')));
      for (const release of held.splice(0)) release();
      assert.deepEqual(
        (await Promise.all([...flood, other])).map((r) => r.status),
        [200, 200, 200, 200],
      );
      assert.deepEqual(refusals(), { '{by="loop"}': 1, '{by="turns"}': 0 });
      // A client alone sends the whole average: refused.
      const alone = appWith({ admission: { floor: 10, targetMs: 0 }, loopWatch: watch });
      await assertOverloaded(await alone.call('/held', undefined, from('10.0.0.3')));
      assert.equal(started, 4);
    } finally {
      loop.refusing = false;
    }
  });

  it('serves nothing to a client already gone, and logs it aborted', async () => {
    held = [];
    started = 0;
    const { call, lines } = appWith();
    const gone: ClientInfo = { remoteAddress: '127.0.0.1', departed: () => true };
    await call('/held', undefined, gone);
    assert.equal(started, 0, 'its handler never ran');
    const line = lines.find((l) => l.message === 'request');
    assert.equal(line?.aborted, true);
    assert.equal(line?.status, null);
  });

  it('refuses nothing when both are tuned off', async () => {
    held = [];
    started = 0;
    const { call } = appWith({ admission: false, loopWatch: false });
    loop.refusing = true;
    try {
      const all = Array.from({ length: 5 }, () => call('/held'));
      await handlersStarted(5);
      for (const release of held.splice(0)) release();
      assert.deepEqual(
        (await Promise.all(all)).map((r) => r.status),
        [200, 200, 200, 200, 200],
      );
    } finally {
      loop.refusing = false;
    }
  });
});

describe('overload through the server (contract §14)', () => {
  it('answers 503 with Retry-After as the OpenAPI document says; health, readiness and metrics answer', async () => {
    const refusing: LoopWatch = { saturated: () => loop.refusing, overloaded: true, stop() {} };
    const t = await startTestServer({}, undefined, { loopWatch: refusing });
    try {
      const admin = await t.user('admin');
      loop.refusing = true;
      // t.fetch checks every answer against the OpenAPI document.
      const refused = await t.fetch('/v1/orders', { headers: bearer(admin.token) });
      await assertOverloaded(refused);
      assert.equal((await t.fetch('/openapi.json')).status, 503);
      for (const path of ['/healthz', '/readyz', '/metrics']) assert.equal((await t.fetch(path)).status, 200, path);
      const metrics = await (await t.fetch('/metrics')).text();
      assert.match(metrics, /^orders_overload_refused_total\{by="loop"\} 2$/m);
      assert.match(metrics, /^orders_database_turns_limit 128$/m);
      loop.refusing = false;
      assert.equal((await t.fetch('/v1/orders', { headers: bearer(admin.token) })).status, 200);
    } finally {
      loop.refusing = false;
      await t.close();
    }
  });
});
