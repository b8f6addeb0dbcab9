/**
 * Each stage of the pipeline (src/pipeline/stages/) alone, on a real
 * Request's exchange, with a fake `next`: what it does on the way in, what
 * it hands on, and what it does to the answer on the way out. compose()
 * first. The pipeline as a whole is tested in test/api/app.test.ts and through
 * the server.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Authenticator, Principal } from '../../src/auth/authenticator.ts';
import { createLogger } from '../../src/base/logger.ts';
import { loadConfig } from '../../src/config/config.ts';
import type { Database, Db } from '../../src/db/database.ts';
import { DeadlineExceeded } from '../../src/db/errors.ts';
import type { LoopWatch } from '../../src/http/loop-watch.ts';
import { HttpError } from '../../src/http/problem.ts';
import { bufferedResponse } from '../../src/http/response.ts';
import { createRouter } from '../../src/http/router.ts';
import { versionPolicy } from '../../src/http/semantics.ts';
import { createHttpMetrics } from '../../src/metrics/http-metrics.ts';
import { unwound, unwinding, Unwinding, type Answer } from '../../src/pipeline/answer.ts';
import { attempt, compose, pass, type Next, type Stage } from '../../src/pipeline/compose.ts';
import type { HandlerServices, ReplicaReads, RouteSpec } from '../../src/pipeline/context.ts';
import { newExchange, type Exchange } from '../../src/pipeline/exchange.ts';
import { planned, type PlannedRoute } from '../../src/pipeline/plan.ts';
import { authorize } from '../../src/pipeline/stages/authorize.ts';
import { databaseDeadline, requestBody, work } from '../../src/pipeline/stages/body.ts';
import { createBodyBudget } from '../../src/http/body-budget.ts';
import { conditional, preconditions } from '../../src/pipeline/stages/conditional.ts';
import { cors } from '../../src/pipeline/stages/cors.ts';
import { representationFields } from '../../src/pipeline/stages/fields.ts';
import { idempotency } from '../../src/pipeline/stages/idempotency.ts';
import { addressLimit, createLimits } from '../../src/pipeline/stages/limits.ts';
import { observe } from '../../src/pipeline/stages/observe.ts';
import { shedding } from '../../src/pipeline/stages/overload.ts';
import { problems } from '../../src/pipeline/stages/problems.ts';
import { fallingBack, replicaReads } from '../../src/pipeline/stages/replica.ts';
import { negotiation, route } from '../../src/pipeline/stages/route.ts';
import { UNKNOWN } from '../../src/replica/positions.ts';

const doc = { summary: 'test route', success: { status: 200 } } as const;
const ok = async () => new Response('ok');
const getOrderSpec: RouteSpec = { method: 'GET', pattern: '/orders/{id:int}', auth: 'orders:read', doc, handler: ok };
const getOrder = planned(getOrderSpec);
const health = planned({
  method: 'GET',
  pattern: '/healthz',
  auth: 'public',
  doc,
  handler: ok,
  versioned: false,
  rateLimited: 'never',
  overload: 'exempt',
});
const router = createRouter<PlannedRoute>([
  { method: 'GET', pattern: getOrder.pattern, handler: getOrder },
  { method: 'PATCH', pattern: getOrder.pattern, handler: planned({ ...getOrderSpec, method: 'PATCH' }) },
  { method: 'GET', pattern: '/healthz', handler: health, versioned: false },
]);
const primary = { name: 'primary' } as unknown as Database;
const operations = { name: 'operations' } as unknown as Database['operations'];
const principal: Principal = { userId: 7, role: 'customer', tokenId: 1, scopes: new Set(['orders:read']) };

/** The exchange of a request to `path`, as the pipeline makes it. */
function exchange(path: string, init: RequestInit = {}, fields: Partial<Exchange> = {}): Exchange {
  const x = newExchange(
    new Request(`http://localhost${path}`, init),
    { remoteAddress: '10.0.0.1' },
    {
      trusted: undefined,
      proxyHeader: 'x-forwarded-for',
      router,
      database: primary,
      operations,
      services: {} as HandlerServices,
    },
  );
  return Object.assign(x, fields);
}

describe('newExchange()', () => {
  const parts = {
    trusted: undefined,
    proxyHeader: 'x-forwarded-for' as const,
    router,
    database: primary,
    operations,
    services: {} as HandlerServices,
  };
  it("gives the path as URL parsing does, the client's own when it has nothing to resolve", () => {
    const paths = [
      '/v1/orders/12',
      '/v1/orders/a-b_c~D9/',
      '/',
      '/v1/orders/../users/1',
      '/v1/./orders',
      '/v1/%2e%2E/users',
      '/v1/orders/%41',
      '/v1\\orders',
      '/v1/or ders',
      '/v1/ordérs',
      '/v1/orders.json',
      '//v1',
    ];
    for (const path of paths) {
      const x = newExchange(new Request(`http://localhost${path}`), { remoteAddress: '10.0.0.1', path }, parts);
      assert.equal(x.path, path);
      assert.equal(x.pathname, new URL(`http://localhost${path}`).pathname, path);
      assert.equal(x.url.pathname, x.pathname, path);
      assert.equal(x.url, x.url, 'parsed once');
    }
  });

  it("sends an exempt route's statements to the operations connection, every other route's to the database", () => {
    const sources = ['/healthz', '/v1/orders/1', '/nowhere'].map((path) => {
      const x = newExchange(new Request(`http://localhost${path}`), { remoteAddress: '10.0.0.1' }, parts);
      return (x.source as unknown as { name: string }).name;
    });
    assert.deepEqual(sources, ['operations', 'primary', 'primary']);
  });
});

/** A `next` that answers `response` (a fresh copy each time) and counts its calls. */
function fakeNext(
  make: () => Response | Promise<Response> = () => new Response('inner'),
): Next<Exchange> & { calls: number } {
  const next = Object.assign(
    async () => {
      next.calls += 1;
      return make();
    },
    { calls: 0 },
  );
  return next;
}

/** The outcome of `stage` on `x`: its response, or the HttpError it threw (with the decisions it carried). */
async function outcome(stage: Stage<Exchange>, x: Exchange, next: Next<Exchange>): Promise<Response | HttpError> {
  try {
    return await stage(x, next);
  } catch (thrown) {
    const { error } = unwound(thrown);
    if (error instanceof HttpError) return error;
    throw thrown;
  }
}

/** A stage that hands outward an `Answer`, run as if the stages inside gave a `Response`: its `Response`. */
function asResponses(stage: Stage<Exchange, Answer>): Stage<Exchange> {
  return async (x, next) => (await stage(x, async (y) => ({ response: await next(y) }))).response;
}

describe('attempt()', () => {
  it('hands back the promise it is given, and turns a synchronous throw into a rejection', async () => {
    const given = Promise.resolve('answer');
    assert.equal(
      attempt(() => given, 1),
      given,
    );
    const rejected = attempt((state: number) => {
      throw new Error(`thrown before answering ${state}`);
    }, 2);
    await assert.rejects(rejected, { message: 'thrown before answering 2' });
  });
});

describe('compose()', () => {
  /** A state compose() can run: what the stages saw, and the stage the request is in. */
  type Seen = { seen: string[]; stage: number };
  const fresh = (): Seen => ({ seen: [], stage: 0 });

  it('runs the stages in order on the way in and in reverse on the way out', async () => {
    const stage =
      (name: string): Stage<Seen> =>
      async (state, next) => {
        state.seen.push(`${name} in`);
        const response = await next(state);
        state.seen.push(`${name} out`);
        return response;
      };
    const run = compose<Seen>([stage('a'), stage('b'), async () => new Response('end')]);
    const state = fresh();
    const response = await run(state);
    assert.equal(await response.text(), 'end');
    assert.deepEqual(state.seen, ['a in', 'b in', 'b out', 'a out']);
  });

  it('hands outward what the stages give, a Response or another value (an Answer)', async () => {
    const run = compose<Seen, Answer>([
      async (state, next) => ({ ...(await next(state)), version: 2 }),
      async () => ({ response: new Response('end') }),
    ]);
    const answer = await run(fresh());
    assert.deepEqual([await answer.response.text(), answer.version], ['end', 2]);
  });

  it('refuses a last stage that calls next(), and an empty list', async () => {
    const run = compose<Seen>([async (state, next) => next(state)]);
    await assert.rejects(run(fresh()), /the last stage called next\(\): it must answer/);
    assert.throws(() => compose([]), TypeError);
  });

  it('refuses a second next() from any stage, after the stages inside have run once', async () => {
    let ends = 0;
    const last = async () => {
      ends += 1;
      return new Response('end');
    };
    const twice: Stage<Seen> = async (state, next) => {
      await next(state);
      return next(state);
    };
    const once: Stage<Seen> = (state, next) => next(state);
    // The outer stage of three, the middle one, and the outer one of a chain nested in another's last stage.
    const nested = compose<Seen>([once, async (state) => compose<Seen>([twice, last])(state)]);
    for (const run of [compose<Seen>([twice, once, last]), compose<Seen>([once, twice, last]), nested]) {
      ends = 0;
      await assert.rejects(run(fresh()), { message: 'a stage called next() twice: it must call it once' });
      assert.equal(ends, 1);
    }
    // The second call is refused even when the first one failed.
    const failing = compose<Seen>([
      async (state, next) => next(state).catch(() => next(state)),
      async () => Promise.reject(new Error('inner')),
    ]);
    await assert.rejects(failing(fresh()), /called next\(\) twice/);
  });

  it('runs a chain again on a new state, and a chain inside another', async () => {
    const inner = compose<Seen>([
      async (state, next) => {
        state.seen.push('inner');
        return next(state);
      },
      async () => new Response('end'),
    ]);
    const outer = compose<Seen>([(state, next) => next(state), async (state) => inner(state)]);
    for (let i = 0; i < 2; i += 1) {
      const state = fresh();
      assert.equal(await (await outer(state)).text(), 'end');
      assert.deepEqual(state.seen, ['inner']);
    }
  });

  it('leaves out a pass() stage: the stages around it still run in order', async () => {
    const run = compose<Seen>([
      async (state, next) => {
        state.seen.push('a');
        return next(state);
      },
      pass(),
      async (state) => {
        state.seen.push('end');
        return new Response(null, { status: 204 });
      },
    ]);
    const state = fresh();
    assert.equal((await run(state)).status, 204);
    assert.deepEqual(state.seen, ['a', 'end']);
    const alone = compose<Seen>([pass(), async () => new Response('only')]);
    assert.equal(await (await alone(fresh())).text(), 'only');
  });
});

describe('observe', () => {
  it('sets the request id, logs one line and counts the request under its route pattern', async () => {
    const lines: Record<string, unknown>[] = [];
    const metrics = createHttpMetrics();
    const stage = observe(
      createLogger('info', (line) => lines.push(JSON.parse(line))),
      metrics,
    );
    const x = exchange('/v1/orders/3', { headers: { 'x-request-id': 'req-1' } });
    // The principal is the authorize stage's, handed outward with the answer.
    const { response } = await stage(x, async () => ({ response: new Response(null, { status: 204 }), principal }));
    assert.equal(response.headers.get('x-request-id'), 'req-1');
    assert.equal(lines.length, 1);
    const { time, durationMs, ...line } = lines[0] as Record<string, unknown>;
    assert.equal(typeof durationMs, 'number');
    assert.deepEqual(line, {
      level: 'info',
      message: 'request',
      requestId: 'req-1',
      method: 'GET',
      path: '/v1/orders/3',
      status: 204,
      userId: 7,
      clientAddress: '10.0.0.1',
    });
    assert.match(
      metrics.render(),
      /orders_http_requests_total\{route="\/orders\/\{id\}",method="GET",status="204"\} 1/,
    );
  });

  it('counts a request refused before its route answered (413) under its route; aborted: no status', async () => {
    const lines: Record<string, unknown>[] = [];
    const metrics = createHttpMetrics();
    const stage = observe(
      createLogger('info', (line) => lines.push(JSON.parse(line))),
      metrics,
    );
    const x = exchange('/v1/orders/3', { method: 'PATCH', body: '{}' });
    await stage(x, async () => ({ response: bufferedResponse(null, { status: 400 }), aborted: true }));
    assert.equal(lines[0]?.status, null);
    assert.equal(lines[0]?.aborted, true);
    assert.match(
      metrics.render(),
      /orders_http_requests_total\{route="\/orders\/\{id\}",method="PATCH",status="aborted"\} 1/,
    );
  });
});

describe('cors', () => {
  const stage = asResponses(cors((origin) => (origin === 'https://app.example' ? origin : undefined)));

  it('does nothing when no origin is configured', async () => {
    const next = fakeNext();
    const response = await asResponses(cors(undefined))(
      exchange('/healthz', { headers: { origin: 'https://a' } }),
      next,
    );
    assert.equal(response.headers.get('vary'), null);
    assert.equal(next.calls, 1);
  });

  it('gives a listed origin its fields and every answer Vary: Origin', async () => {
    const listed = await stage(exchange('/healthz', { headers: { origin: 'https://app.example' } }), fakeNext());
    assert.equal(listed.headers.get('access-control-allow-origin'), 'https://app.example');
    assert.equal(listed.headers.get('vary'), 'Origin');
    const other = await stage(exchange('/healthz', { headers: { origin: 'https://evil.example' } }), fakeNext());
    assert.equal(other.headers.get('access-control-allow-origin'), null);
    assert.equal(other.headers.get('vary'), 'Origin');
  });

  it('marks a preflight for the stages inside and gives its 204 the preflight fields', async () => {
    const x = exchange('/v1/orders/1', {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'PATCH' },
    });
    const next = fakeNext(() => {
      assert.equal(x.preflight, true);
      return bufferedResponse(null, { status: 204, headers: { allow: 'GET, HEAD, PATCH, OPTIONS' } });
    });
    const response = await stage(x, next);
    assert.equal(response.headers.get('access-control-allow-methods'), 'GET, HEAD, PATCH, OPTIONS');
    assert.equal(response.headers.get('vary'), 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers');
  });
});

describe('representation fields', () => {
  const config = loadConfig({});
  const fields = representationFields(versionPolicy(config));
  const stage = asResponses(fields);

  it('varies by Accept and Authorization where the route does, and marks version 1 deprecated', async () => {
    // Version 1 as the negotiate stage handed it outward, on a path without a prefix.
    const x = exchange('/orders/1', {}, { route: getOrder });
    const { response } = await fields(x, async () => ({
      response: bufferedResponse(null, { status: 404 }),
      version: 1,
    }));
    assert.equal(response.headers.get('vary'), 'Accept, Authorization');
    assert.equal(response.headers.get('link'), '</v2/orders/1>; rel="successor-version"');
    assert.equal(response.headers.get('sunset'), config.v1SunsetAt.toUTCString());
    // Refused before negotiation, under /v1/: the path's prefix.
    const early = await stage(
      exchange('/v1/nowhere'),
      fakeNext(() => bufferedResponse(null, { status: 404 })),
    );
    assert.equal(early.headers.get('link'), '</v2/nowhere>; rel="successor-version"');
  });

  it("adds its Vary names to the answer's own, once each, and leaves Vary: * alone", async () => {
    const x = () => exchange('/v2/orders/1', {}, { route: getOrder });
    const answered = (vary: string) =>
      fields(x(), async () => ({ response: bufferedResponse(null, { status: 200, headers: { vary } }), version: 2 }));
    assert.equal((await answered('Prefer')).response.headers.get('vary'), 'Prefer, Accept, Authorization');
    assert.equal((await answered('accept')).response.headers.get('vary'), 'accept, Authorization');
    assert.equal((await answered('*')).response.headers.get('vary'), '*');
  });

  it('adds nothing to an answer of no route in no version', async () => {
    const response = await stage(
      exchange('/nowhere'),
      fakeNext(() => bufferedResponse(null, { status: 404 })),
    );
    assert.deepEqual([...response.headers.keys()], []);
  });
});

describe('address limit', () => {
  const limits = createLimits(loadConfig({ RATE_LIMIT: '2/60' }), createHttpMetrics(), undefined);

  it('counts an answer no route counted against its address, then refuses with 429 past the limit', async () => {
    const stage = asResponses(addressLimit(limits));
    const statuses: (number | string | null)[] = [];
    for (let i = 0; i < 3; i += 1) {
      const response = await stage(
        exchange('/nowhere'),
        fakeNext(() => bufferedResponse(null, { status: 404 })),
      );
      statuses.push(response.status, response.headers.get('ratelimit'));
    }
    assert.deepEqual(statuses, [404, '"default";r=1;t=60', 404, '"default";r=0;t=60', 429, '"default";r=0;t=60']);
  });

  it('never counts a health check, and only reports a decision the user limit made', async () => {
    const stage = asResponses(addressLimit(limits));
    for (let i = 0; i < 3; i += 1) {
      const response = await stage(exchange('/healthz', {}, { route: health }), fakeNext());
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('ratelimit'), null);
    }
    const x = exchange('/v1/orders/1', {}, { route: getOrder });
    const rate = { allowed: true, remaining: 5, resetSeconds: 9 };
    const { response } = await addressLimit(limits)(x, async () => ({ response: new Response('inner'), rate }));
    assert.equal(response.headers.get('ratelimit'), '"default";r=5;t=9');
  });
});

describe('shedding (contract §14)', () => {
  /**
   * Client 10.0.0.1 sends 100 requests and 10.0.0.2 one while the loop keeps up; `laterMs` after, with the loop
   * saturated, the second sends three and the first one: the statuses of those four.
   */
  async function burstThen(laterMs: number): Promise<number[]> {
    let loaded = false;
    const watch: LoopWatch = {
      saturated: () => loaded,
      get overloaded() {
        return loaded;
      },
      stop() {},
    };
    const stage = asResponses(shedding(watch, createHttpMetrics()));
    const t0 = performance.now();
    const call = async (address: string, ms: number) =>
      (await stage(exchange('/v1/orders/1', {}, { route: getOrder, address, started: t0 + ms }), fakeNext())).status;
    for (let i = 0; i < 100; i += 1) assert.equal(await call('10.0.0.1', i), 200);
    assert.equal(await call('10.0.0.2', 100), 200);
    loaded = true;
    const statuses = [];
    for (const address of ['10.0.0.2', '10.0.0.2', '10.0.0.2', '10.0.0.1']) statuses.push(await call(address, laterMs));
    return statuses;
  }

  it("counts a client's burst against it in the second after, as its share of the last two", async () => {
    // 10.0.0.1: 101 of the 105 requests of two clients, past its share: refused; 10.0.0.2 well within it: served.
    assert.deepEqual(await burstThen(1_100), [200, 200, 200, 503]);
  });

  it('forgets the burst after a quiet spell: the shares are those of the requests since', async () => {
    // 5 s later only the requests since count: 10.0.0.2 sends all of the first three (refused), 10.0.0.1 one of four.
    assert.deepEqual(await burstThen(5_000), [503, 503, 503, 200]);
  });
});

describe('problems', () => {
  it('turns an HttpError into its problem response, and another error into a logged 500', async () => {
    const lines: Record<string, unknown>[] = [];
    const stage = asResponses(problems(createLogger('info', (line) => lines.push(JSON.parse(line)))));
    const refused = await stage(
      exchange('/x'),
      fakeNext(() => {
        throw new HttpError(404, 'not-found', { detail: 'No.' });
      }),
    );
    assert.equal(refused.status, 404);
    assert.equal(refused.headers.get('content-type'), 'application/problem+json');
    assert.equal(((await refused.json()) as { detail: string }).detail, 'No.');
    const failed = await stage(
      exchange('/x'),
      fakeNext(() => {
        throw new Error('secret');
      }),
    );
    assert.equal(failed.status, 500);
    assert.doesNotMatch(await failed.text(), /secret/);
    assert.equal(lines.filter((line) => line.message === 'unhandled error').length, 1);
  });

  it('answers a database past its deadline with 503', async () => {
    const stage = asResponses(problems(createLogger('silent')));
    const response = await stage(exchange('/x'), () => Promise.reject(new DeadlineExceeded(5_000)));
    assert.equal(response.status, 503);
  });

  it('answers an error with the decisions of the stages it passed on its way out', async () => {
    const stage = problems(createLogger('silent'));
    const rate = { allowed: false, remaining: 0, resetSeconds: 7 };
    const thrown = unwinding(unwinding(new HttpError(429, 'rate-limited'), { rate }), { version: 2 });
    const answer = await stage(exchange('/x'), () => Promise.reject(thrown));
    assert.deepEqual([answer.response.status, answer.rate, answer.version], [429, rate, 2]);
    assert.ok(thrown instanceof Unwinding);
  });
});

describe('body', () => {
  const limits = (budget = 1_000) => ({ maxBodyBytes: 4, bodyTimeoutMs: 1_000, budget: createBodyBudget(budget) });
  const declared = (body: string, length = String(body.length)) =>
    exchange('/x', { method: 'POST', body, headers: { 'content-length': length } });

  it('refuses a declared length past the limit with 413 before reading, and hands the body on', async () => {
    const stage = requestBody(limits());
    const large = await outcome(stage, declared('12345'), fakeNext());
    assert.ok(large instanceof HttpError);
    assert.equal(large.status, 413);
    const x = exchange('/x', { method: 'POST', body: '1234' });
    await stage(x, fakeNext());
    assert.equal(new TextDecoder().decode(x.body), '1234');
  });

  it('takes what the body holds from the budget while the request runs, and gives it back after', async () => {
    const budget = createBodyBudget(6);
    const stage = requestBody({ ...limits(), budget });
    let held = -1;
    await stage(
      declared('1234'),
      fakeNext(() => {
        held = budget.held;
        return new Response('inner');
      }),
    );
    assert.deepEqual([held, budget.held], [4, 0]);
  });

  it('refuses a body past the budget with 503 and Retry-After, reading nothing and holding nothing', async () => {
    const budget = createBodyBudget(6);
    budget.take(3, 'another client');
    const next = fakeNext();
    const refused = await outcome(requestBody({ ...limits(), budget }), declared('1234'), next);
    assert.ok(refused instanceof HttpError);
    assert.deepEqual([refused.status, refused.slug, refused.init?.headers?.['retry-after']], [503, 'unavailable', '1']);
    assert.deepEqual([next.calls, budget.held], [0, 3]);
  });

  it("refuses a client past its share with 429, and reads another client's body meanwhile", async () => {
    const budget = createBodyBudget(100, 6);
    budget.take(3, 'user 7');
    const stage = requestBody({ ...limits(), budget });
    const of = (userId: number) => {
      const x = declared('1234');
      x.principal = { ...principal, userId };
      return x;
    };
    const refused = await outcome(stage, of(7), fakeNext());
    assert.ok(refused instanceof HttpError);
    assert.deepEqual(
      [refused.status, refused.slug, refused.init?.headers?.['retry-after']],
      [429, 'rate-limited', '1'],
    );
    const other = of(8);
    await stage(other, fakeNext());
    assert.deepEqual([new TextDecoder().decode(other.body), budget.held], ['1234', 3]);
  });

  it('stops the database deadline while it reads, and starts it again after', async () => {
    const events: string[] = [];
    const x = declared('12');
    x.deadline = {
      pause: () => events.push('pause'),
      resume: () => events.push('resume'),
      race: (work) => work,
      settle: () => {},
      expired: false,
    };
    await requestBody(limits())(
      x,
      fakeNext(() => {
        events.push('next');
        return new Response('inner');
      }),
    );
    assert.deepEqual(events, ['pause', 'resume', 'next']);
  });
});

describe('database deadline and work', () => {
  it('rejects with DeadlineExceeded once the inner stages have had their time, pauses left out', async () => {
    const run = (inner: (x: Exchange) => Promise<Response>) =>
      compose<Exchange, Answer>([databaseDeadline(30, createLogger('silent')), work(inner)]);
    await assert.rejects(run(() => new Promise(() => {}))(exchange('/x')), DeadlineExceeded);
    const x = exchange('/x');
    const paused = await run(async (inner) => {
      inner.deadline?.pause();
      await new Promise((resolve) => setTimeout(resolve, 60));
      inner.deadline?.resume();
      return new Response('in time');
    })(x);
    assert.equal(await paused.response.text(), 'in time');
    assert.equal(x.deadline?.expired, false);
  });

  it('unwinds a request past its time through the stages it passed, with their decisions', async () => {
    const limits = createLimits(loadConfig({ RATE_LIMIT: '5/60' }), createHttpMetrics(), undefined);
    const authenticator: Authenticator = { authenticate: async () => principal };
    const run = compose<Exchange, Answer>([
      problems(createLogger('silent')),
      databaseDeadline(30, createLogger('silent')),
      authorize(authenticator, limits),
      work(() => new Promise(() => {})),
    ]);
    const x = exchange('/v1/orders/1', { headers: { authorization: 'Bearer good' } }, { route: getOrder });
    const answer = await run(x);
    assert.deepEqual([answer.response.status, answer.principal, answer.rate?.remaining], [503, principal, 4]);
  });
});

describe('route and negotiate', () => {
  it('serves a connection of the health reserve its health checks only: anything else 503, closed', async () => {
    const stage = asResponses(route());
    const reserve = { client: { remoteAddress: '10.0.0.1', healthOnly: true } };
    const refused = await outcome(stage, exchange('/v1/orders/1', {}, reserve), fakeNext());
    assert.ok(refused instanceof HttpError);
    assert.deepEqual(
      [refused.status, refused.slug, refused.init.headers],
      [503, 'unavailable', { 'retry-after': '1', connection: 'close' }],
    );
    const next = fakeNext();
    await stage(exchange('/healthz', {}, reserve), next);
    assert.equal(next.calls, 1);
  });

  it('refuses 404 and 405, answers OPTIONS with Allow, and passes a found route on', async () => {
    const stage = asResponses(route());
    const missing = await outcome(stage, exchange('/v1/nothing'), fakeNext());
    assert.ok(missing instanceof HttpError && missing.status === 404);
    const wrong = await outcome(stage, exchange('/v1/orders/1', { method: 'DELETE' }), fakeNext());
    assert.ok(wrong instanceof HttpError);
    assert.deepEqual([wrong.status, wrong.init?.headers], [405, { allow: 'GET, HEAD, PATCH, OPTIONS' }]);
    const options = await stage(exchange('/v1/orders/1', { method: 'OPTIONS' }), fakeNext());
    assert.deepEqual(Object.fromEntries(options.headers), {
      allow: 'GET, HEAD, PATCH, OPTIONS',
      'accept-patch': 'application/json, application/merge-patch+json',
    });
    // Found when the request arrived: the route stage only answers what is not a route's.
    const x = exchange('/v2/orders/12');
    const next = fakeNext();
    await stage(x, next);
    assert.deepEqual(
      [x.route, x.params, x.match.version, x.version, next.calls],
      [getOrder, { id: 12 }, 2, undefined, 1],
    );
  });

  it('settles the version and media type from Accept, and refuses what it cannot serve with 406', async () => {
    const stage = asResponses(negotiation(versionPolicy(loadConfig({}))));
    const x = exchange('/orders/1', { headers: { accept: 'application/vnd.orders.v2+json' } }, { route: getOrder });
    await stage(x, fakeNext());
    assert.deepEqual([x.version, x.contentType], [2, 'application/vnd.orders.v2+json']);
    // The path's prefix is the version asked for: a vendor type of another version is refused.
    const prefixed = exchange('/v2/orders/1', { headers: { accept: 'application/json' } });
    await stage(prefixed, fakeNext());
    assert.deepEqual([prefixed.version, prefixed.contentType], [2, 'application/json']);
    const refused = await outcome(
      stage,
      exchange('/orders/1', { headers: { accept: 'text/html' } }, { route: getOrder }),
      fakeNext(),
    );
    assert.ok(refused instanceof HttpError && refused.status === 406);
  });
});

describe('authorize', () => {
  const authenticator: Authenticator = {
    async authenticate(header) {
      if (header === 'Bearer good') return principal;
      throw new HttpError(401, 'unauthorized');
    },
  };

  it('authenticates, counts the user and checks the scope, in that order', async () => {
    const limits = createLimits(loadConfig({ RATE_LIMIT: '5/60' }), createHttpMetrics(), undefined);
    const authorizing = authorize(authenticator, limits);
    const stage = asResponses(authorizing);
    const x = exchange('/v1/orders/1', { headers: { authorization: 'Bearer good' } }, { route: getOrder });
    const answer = await authorizing(x, async () => ({ response: new Response('inner') }));
    assert.deepEqual([x.principal, answer.principal, answer.rate?.remaining], [principal, principal, 4]);
    const admin = planned({ ...getOrderSpec, auth: 'users:write' as const });
    const y = exchange('/v1/orders/1', { headers: { authorization: 'Bearer good' } }, { route: admin });
    const thrown = await authorizing(y, async () => ({ response: new Response('inner') })).catch((e: unknown) => e);
    const { error, decisions } = unwound(thrown);
    assert.ok(error instanceof HttpError && error.status === 403);
    assert.equal(decisions.rate?.remaining, 3, 'counted before the scope was checked, and handed outward');
    const anonymous = await outcome(stage, exchange('/v1/orders/1', {}, { route: getOrder }), fakeNext());
    assert.ok(anonymous instanceof HttpError && anonymous.status === 401);
  });
});

describe('replica reads', () => {
  /** A handle whose statements say where they ran (`where`), or fail with `error`. */
  const handleAt = (where: string, ran: string[], error?: Error) =>
    ({
      one: async (name: string) => {
        ran.push(`${where}:${name}`);
        if (error !== undefined) throw error;
        return { at: where };
      },
    }) as unknown as Db;
  const ran: string[] = [];
  const replicaDb = { handle: () => handleAt('replica', ran) } as unknown as Database;
  const recorded: [number, bigint][] = [];
  const failures: unknown[] = [];
  const reads = (serves: boolean, position: bigint | typeof UNKNOWN | undefined = undefined): ReplicaReads =>
    ({
      replica: { serves: () => serves, db: replicaDb, failed: (error: unknown) => failures.push(error) },
      positions: {
        lookup: async () => position,
        record: async (user: number, lsn: bigint) => {
          recorded.push([user, lsn]);
        },
      },
    }) as unknown as ReplicaReads;
  const withWal = {
    one: async () => ({ lsn: '0/16B3748' }),
    handle: () => handleAt('primary', ran),
  } as unknown as Database;
  const replicated = planned({ ...getOrderSpec, replica: true });
  const tagged = { ...replicated, currentTag: async () => '"r1"' };
  /** Where a statement on `source` runs. */
  const runsOn = async (source: { handle(scope: never): Db } | undefined) => {
    ran.length = 0;
    await source?.handle(undefined as never).one('GetOrderJson', [1, null]);
    return ran.join();
  };

  it('records the position of a write for its principal, after the write', async () => {
    recorded.length = 0;
    const stage = replicaReads(reads(true), withWal, createLogger('silent'));
    const patch = planned({ ...getOrderSpec, method: 'PATCH' });
    const x = exchange('/v1/orders/1', { method: 'PATCH' }, { route: patch, principal, source: withWal });
    const next = fakeNext(() => {
      assert.deepEqual(recorded, []);
      return new Response('written');
    });
    await stage(x, next);
    assert.deepEqual(recorded, [[7, 0x16b3748n]]);
  });

  it('reads on the replica when it serves the principal, else on the primary; next() once', async () => {
    const on = exchange('/v1/orders/1', {}, { route: replicated, principal, source: withWal });
    const next = fakeNext();
    await replicaReads(reads(true, 5n), withWal, createLogger('silent'))(on, next);
    assert.deepEqual([await runsOn(on.source), on.tagSource, next.calls], ['replica:GetOrderJson', undefined, 1]);
    const unknown = exchange('/v1/orders/1', {}, { route: replicated, principal, source: withWal });
    await replicaReads(reads(true, UNKNOWN), withWal, createLogger('silent'))(unknown, fakeNext());
    assert.equal(unknown.source, withWal, 'the exchange keeps its primary');
    const unmarked = exchange('/v1/orders/1', {}, { route: getOrder, principal, source: withWal });
    await replicaReads(reads(true), withWal, createLogger('silent'))(unmarked, fakeNext());
    assert.equal(unmarked.source, withWal);
  });

  it('reads the tag of a conditional GET on the replica, a 200 on the primary; no tag, the primary', async () => {
    const stage = replicaReads(reads(true), withWal, createLogger('silent'));
    const headers = { 'if-none-match': '"r0"' };
    const x = exchange('/v1/orders/1', { headers }, { route: tagged, principal, source: withWal });
    const next = fakeNext();
    await stage(x, next);
    assert.deepEqual([await runsOn(x.tagSource), x.source, next.calls], ['replica:GetOrderJson', withWal, 1]);
    const list = exchange('/v1/orders/1', { headers }, { route: replicated, principal, source: withWal });
    await stage(list, fakeNext());
    assert.deepEqual([list.source, list.tagSource], [withWal, undefined]);
  });
});

describe('fallingBack()', () => {
  it('runs a statement the replica fails for want of it again on the primary, and the next ones there', async () => {
    const ran: string[] = [];
    const down = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const at = (where: string, error?: Error) =>
      ({
        one: async (name: string) => {
          ran.push(`${where}:${name}`);
          if (error !== undefined) throw error;
          return where;
        },
      }) as unknown as Db;
    const failures: unknown[] = [];
    let primaries = 0;
    const db = fallingBack(
      at('replica', down),
      () => {
        primaries += 1;
        return at('primary');
      },
      (e) => failures.push(e),
    );
    assert.equal(await db.one('Ping'), 'primary');
    assert.equal(await db.one('Readiness'), 'primary');
    assert.deepEqual([ran, failures, primaries], [['replica:Ping', 'primary:Ping', 'primary:Readiness'], [down], 1]);
  });

  it('lets any other error of the replica through, and stays on it', async () => {
    const wrong = new HttpError(404, 'not-found');
    const replica = { one: async () => Promise.reject(wrong) } as unknown as Db;
    const db = fallingBack(
      replica,
      () => assert.fail('no primary'),
      () => assert.fail('not a failure'),
    );
    await assert.rejects(db.one('Ping'), wrong);
  });
});

describe('preconditions and conditional', () => {
  const stage: Stage<Exchange> = (x, next) => preconditions()(x, (y) => conditional(30)(y, next));
  const tagged = planned({ ...getOrderSpec, cache: 'private' as const, currentTag: async () => '"r7"' });

  it('refuses a malformed If-None-Match with 400 before the handler, on any route', async () => {
    const next = fakeNext();
    const refused = await outcome(
      preconditions(),
      exchange('/v1/orders/1', { headers: { 'if-none-match': 'r7' } }, { route: getOrder }),
      next,
    );
    assert.ok(refused instanceof HttpError);
    assert.deepEqual([refused.status, refused.slug, next.calls], [400, 'invalid-header', 0]);
  });

  it('answers 304 from the route tag before the handler, and finishes the handler 200 otherwise', async () => {
    const early = fakeNext();
    const x = exchange('/v1/orders/1', { headers: { 'if-none-match': 'W/"r7"' } }, { route: tagged });
    const notModified = await stage(x, early);
    assert.deepEqual([notModified.status, notModified.headers.get('etag'), early.calls], [304, '"r7"', 0]);
    const y = exchange('/v1/orders/1', { headers: { 'if-none-match': '"r6"' } }, { route: tagged });
    const fresh = await stage(
      y,
      fakeNext(() => bufferedResponse(new TextEncoder().encode('{}'), { status: 200, headers: { etag: '"r7"' } })),
    );
    assert.deepEqual([fresh.status, fresh.headers.get('cache-control')], [200, 'private, max-age=30']);
  });

  it('reads the route tag where the replica stage says (tagSource), the 200 on the source', async () => {
    const seen: unknown[] = [];
    const tags = { name: 'tags' } as unknown as Db;
    const currentTag = async (ctx: { db: Db }) => {
      seen.push(ctx.db);
      return '"r7"';
    };
    const route = { ...tagged, currentTag };
    const x = exchange('/v1/orders/1', { headers: { 'if-none-match': '"r7"' } }, { route });
    x.tagSource = { handle: () => tags };
    assert.equal((await stage(x, fakeNext())).status, 304);
    assert.deepEqual(seen, [tags]);
  });

  it('parses If-Match only where the route checks it, and hands it on', async () => {
    const checked = planned({ ...getOrderSpec, method: 'PATCH' as const, doc: { ...doc, ifMatch: true } });
    const x = exchange('/v1/orders/1', { method: 'PATCH', headers: { 'if-match': '"a"' } }, { route: checked });
    await stage(x, fakeNext());
    assert.deepEqual(x.conditions, { ifNoneMatch: null, ifMatch: [{ weak: false, opaque: '"a"' }] });
    const y = exchange('/v1/orders/1', { method: 'PATCH', headers: { 'if-match': 'a' } }, { route: getOrder });
    await stage(y, fakeNext());
    assert.deepEqual(y.conditions, { ifNoneMatch: null, ifMatch: null });
  });
});

describe('idempotency', () => {
  const stage = idempotency();

  it('leaves a GET, and a POST of no principal, to the handler', async () => {
    const next = fakeNext();
    const post = planned({ ...getOrderSpec, method: 'POST' });
    await stage(exchange('/v1/orders/1', { headers: { 'idempotency-key': 'k' } }, { route: getOrder }), next);
    const init = { method: 'POST', body: '{}', headers: { 'idempotency-key': 'k' } };
    await stage(exchange('/v1/orders', init, { route: post }), next);
    assert.equal(next.calls, 2);
  });

  it('refuses a malformed key, and a missing one where the route requires it, with 400', async () => {
    const pay = planned({ ...getOrderSpec, method: 'POST' as const, idempotency: 'required' as const });
    const malformed = await outcome(
      stage,
      exchange(
        '/v1/payments',
        { method: 'POST', body: '{}', headers: { 'idempotency-key': '' } },
        { route: pay, principal },
      ),
      fakeNext(),
    );
    assert.ok(malformed instanceof HttpError);
    assert.deepEqual([malformed.status, malformed.slug], [400, 'invalid-header']);
    const missing = await outcome(
      stage,
      exchange('/v1/payments', { method: 'POST', body: '{}' }, { route: pay, principal }),
      fakeNext(),
    );
    assert.ok(missing instanceof HttpError);
    assert.deepEqual([missing.status, missing.slug], [400, 'idempotency-key-missing']);
  });

  it('runs a keyed POST in a savepoint of its own transaction, and stores the answer as it came out', async () => {
    const savepoint = { name: 'savepoint' } as unknown as Db;
    const stored: unknown[][] = [];
    const tx = {
      one: async () => ({ locked: true, fingerprint: null }),
      savepoint: async (run: (db: Db) => Promise<Response>) => run(savepoint),
      exec: async (name: string, params: unknown[]) => stored.push([name, params[3], params[4]]),
    };
    const handle = { begin: async (run: (db: unknown) => Promise<Response>) => run(tx) } as unknown as Db;
    const x = exchange(
      '/v1/orders',
      { method: 'POST', body: '{}', headers: { 'idempotency-key': 'key-1' } },
      { route: planned({ ...getOrderSpec, method: 'POST' }), principal, handle },
    );
    // What the stages inside gave (the conditional stage finished it there): not finished again here.
    const finished = { etag: '"t"', 'cache-control': 'no-store' };
    const response = await stage(
      x,
      fakeNext(() => bufferedResponse(new TextEncoder().encode('{}'), { status: 201, headers: finished })),
    );
    assert.equal(x.savepoint, savepoint);
    assert.deepEqual([response.status, response.headers.get('etag')], [201, '"t"']);
    assert.deepEqual(stored, [['StoreIdempotencyKey', 201, JSON.stringify({ etag: '"t"' })]]);
  });
});
