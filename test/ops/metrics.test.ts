/**
 * GET /metrics (contract §16): the recorder and the exposition format on their
 * own, then the real server: figures that move by exactly what the test
 * sends, labels that never hold an id, a token or a raw path, METRICS_TOKEN,
 * the rate limit, the pool and a database that does not answer, and
 * Prometheus's own checker (`promtool check metrics`) on the output.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { family, formatValue, labels, sample } from '../../src/metrics/exposition.ts';
import { createHttpMetrics, DURATION_BUCKETS, routeLabel } from '../../src/metrics/http-metrics.ts';
import { openApiPath } from '../../src/openapi/parameters.ts';
import { routes } from '../../src/service/routes.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { bearer, startTestServer, type Account, type TestServer } from '../support/server.ts';
import { cpuMs, slack } from '../support/time.ts';

const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
const TOKEN = 'metrics-token-0123456789abcdef';

/** The value of the sample `name` + `labelText` in `text`; `undefined` when absent. */
function sampleValue(text: string, name: string, labelText = ''): number | undefined {
  const prefix = `${name}${labelText} `;
  const line = text.split('\n').find((l) => l.startsWith(prefix));
  return line === undefined ? undefined : Number(line.slice(prefix.length));
}

/** Every value of label `label` in `text`'s samples. */
function labelValues(text: string, label: string): Set<string> {
  const values = new Set<string>();
  for (const match of text.matchAll(new RegExp(`[{,]${label}="([^"]*)"`, 'g'))) values.add(match[1] as string);
  return values;
}

const hasPromtool = spawnSync('promtool', ['--version']).error === undefined;

describe('the exposition format', () => {
  it('writes a family with its help, type and samples', () => {
    assert.equal(
      family('a_total', 'counter', 'Things.', [sample('a_total', labels({ x: '1' }), 2)]),
      '# HELP a_total Things.\n# TYPE a_total counter\na_total{x="1"} 2\n',
    );
  });
  it('escapes label values and help text as the format wants', () => {
    assert.equal(labels({ a: 'back\\slash "quoted"\nline' }), '{a="back\\\\slash \\"quoted\\"\\nline"}');
    assert.equal(family('x', 'gauge', 'a\\b\nc', []), '# HELP x a\\\\b\\nc\n# TYPE x gauge\n');
    assert.equal(labels({}), '');
  });
  it('writes values as Go parses them', () => {
    assert.deepEqual([NaN, Infinity, -Infinity, 0.25, 3].map(formatValue), ['NaN', '+Inf', '-Inf', '0.25', '3']);
  });
});

describe('createHttpMetrics()', () => {
  it('labels routes as the OpenAPI document writes their patterns', () => {
    assert.equal(routeLabel('/orders/{id:int}'), '/orders/{id}');
    assert.equal(routeLabel('/users/{id:int}/orders'), '/users/{id}/orders');
    assert.equal(routeLabel('/problems/{slug}'), '/problems/{slug}');
  });

  it('counts requests by route, method and status, and times them per route and method', () => {
    const metrics = createHttpMetrics();
    metrics.request('/orders/{id:int}', 'GET', 200, 0.004);
    metrics.request('/orders/{id:int}', 'GET', 200, 0.02);
    metrics.request('/orders/{id:int}', 'GET', 404, 30);
    metrics.request(undefined, 'BREW', 404, 0.0005);
    metrics.request('/orders', 'POST', undefined, 1);
    metrics.rateLimited('address');
    metrics.connectionRefused('address');
    metrics.connectionRefused('address');
    metrics.connectionRefused('process');
    metrics.shed('loop');
    metrics.shed('turns');
    metrics.shed('turns');
    metrics.watch({ connections: () => 7, bodyBytes: () => 1_048_576, turns: () => ({ inFlight: 12, limit: 150 }) });
    const buckets = (label: string, method: string, counts: number[], sum: number) =>
      [
        ...counts.map((count, i) => {
          const le = i < DURATION_BUCKETS.length ? DURATION_BUCKETS[i] : '+Inf';
          const bucket = `route="${label}",method="${method}",le="${le}"`;
          return `orders_http_request_duration_seconds_bucket{${bucket}} ${count}\n`;
        }),
        `orders_http_request_duration_seconds_sum{route="${label}",method="${method}"} ${sum}\n`,
        `orders_http_request_duration_seconds_count{route="${label}",method="${method}"} ${counts.at(-1)}\n`,
      ].join('');
    assert.equal(
      metrics.render(),
      [
        '# HELP orders_http_requests_total Requests answered, by route pattern, method and status ' +
          '(aborted: the client left before the answer).\n',
        '# TYPE orders_http_requests_total counter\n',
        'orders_http_requests_total{route="/orders/{id}",method="GET",status="200"} 2\n',
        'orders_http_requests_total{route="/orders/{id}",method="GET",status="404"} 1\n',
        'orders_http_requests_total{route="unmatched",method="other",status="404"} 1\n',
        'orders_http_requests_total{route="/orders",method="POST",status="aborted"} 1\n',
        "# HELP orders_http_request_duration_seconds Time from a request's arrival to its answer, " +
          'by route pattern and method.\n',
        '# TYPE orders_http_request_duration_seconds histogram\n',
        //        1ms 2.5 5  10 25 50 .1 .25 .5 1  2.5 5  10 +Inf
        buckets('/orders/{id}', 'GET', [0, 0, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3], 30.024),
        buckets('unmatched', 'other', [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], 0.0005),
        '# HELP orders_rate_limited_total Requests refused with 429, by the table that refused them ' +
          "(user: a token's user; address: a client address, for its anonymous requests or its failed " +
          'authentications).\n',
        '# TYPE orders_rate_limited_total counter\n',
        'orders_rate_limited_total{limiter="user"} 0\n',
        'orders_rate_limited_total{limiter="address"} 1\n',
        '# HELP orders_connections_refused_total Connections closed as they arrived (contract §11), by the cap ' +
          'they would have passed (process: MAX_CONNECTIONS; address: MAX_CONNECTIONS_PER_ADDRESS).\n',
        '# TYPE orders_connections_refused_total counter\n',
        'orders_connections_refused_total{cap="process"} 1\n',
        'orders_connections_refused_total{cap="address"} 2\n',
        '# HELP orders_overload_refused_total Requests refused with 503 under overload (contract §14), by what ' +
          "refused them (loop: the event loop was saturated; turns: the database's turns were all taken).\n",
        '# TYPE orders_overload_refused_total counter\n',
        'orders_overload_refused_total{by="loop"} 1\n',
        'orders_overload_refused_total{by="turns"} 2\n',
        "# HELP orders_connections_open HTTP connections open now; with WORKERS=N, the workers' sum.\n",
        '# TYPE orders_connections_open gauge\n',
        'orders_connections_open 7\n',
        '# HELP orders_request_body_bytes Bytes held by the request bodies being read or handled now ' +
          '(of BODY_BUDGET_BYTES each process).\n',
        '# TYPE orders_request_body_bytes gauge\n',
        'orders_request_body_bytes 1048576\n',
        '# HELP orders_database_turns Requests doing database work now, waiting for a connection included; ' +
          "with WORKERS=N, the workers' sum.\n",
        '# TYPE orders_database_turns gauge\n',
        'orders_database_turns 12\n',
        '# HELP orders_database_turns_limit The most requests let do their database work at once now: the ' +
          "highest completion rate of the last 10 s times 100 ms, 128 at least; with WORKERS=N, the workers' sum.\n",
        '# TYPE orders_database_turns_limit gauge\n',
        'orders_database_turns_limit 150\n',
      ].join(''),
    );
  });

  it("puts a duration on a bucket's bound into that bucket (le: less or equal)", () => {
    const metrics = createHttpMetrics();
    metrics.request('/x', 'GET', 200, 0.005);
    const text = metrics.render();
    assert.equal(
      sampleValue(text, 'orders_http_request_duration_seconds_bucket', '{route="/x",method="GET",le="0.0025"}'),
      0,
    );
    assert.equal(
      sampleValue(text, 'orders_http_request_duration_seconds_bucket', '{route="/x",method="GET",le="0.005"}'),
      1,
    );
  });

  it('records a request in well under a microsecond: a few Map lookups, no string built', () => {
    const metrics = createHttpMetrics();
    const patterns = ['/orders/{id:int}', '/products', undefined];
    const n = 300_000;
    const ms = cpuMs(() => {
      for (let i = 0; i < n; i++)
        metrics.request(patterns[i % 3], i % 2 === 0 ? 'GET' : 'POST', i % 5 === 0 ? 404 : 200, (i % 50) / 1000);
    });
    const perCall = ms / n;
    // About 0.1 µs of CPU time here (test/support/time.ts: other processes do not add to it); 5 µs still catches
    // a string built or a series looked up by scanning per request.
    assert.ok(perCall < 5e-3, `${(perCall * 1e6).toFixed(0)} ns per request`);
  });
});

describe('GET /metrics on the real server', () => {
  let t: TestServer;
  let admin: Account;
  let customer: Account;
  let hanging: Receiver;
  let refusing: Receiver;
  const scrape = async (server: TestServer = t, headers: Record<string, string> = {}) => {
    const response = await fetch(`${server.url}/metrics`, { headers });
    assert.equal(response.status, 200, await response.clone().text());
    return response.text();
  };

  before(async () => {
    // Deliveries fail at their first failed attempt: one endpoint refuses (failed), one never answers (pending).
    // Every scrape reads the database's figures, so that a test can wait for them to change.
    t = await startTestServer(
      { WEBHOOK_ALLOW_PRIVATE: '1' },
      undefined,
      { metricsDatabaseMaxAgeMs: 0 },
      {
        pollMs: 20,
        leaseSeconds: 120,
        retryDelaysSeconds: [],
        timeoutMs: 60_000,
      },
    );
    hanging = await startReceiver(() => null);
    refusing = await startReceiver(() => 500);
  });
  after(async () => {
    await t.close();
    await hanging.close();
    await refusing.close();
  });

  it("gives the event log's age as 0 while it holds no event", async () => {
    assert.equal(sampleValue(await scrape(), 'orders_event_log_oldest_event_age_seconds'), 0);
  });

  it('answers in the text format 0.0.4, never cached, outside the versions', async () => {
    const response = await fetch(`${t.url}/metrics`);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), CONTENT_TYPE);
    assert.equal(response.headers.get('cache-control'), 'no-store');
    assert.match(await response.text(), /^# HELP orders_http_requests_total /);
    assert.equal((await fetch(`${t.url}/v1/metrics`)).status, 404);
    assert.equal((await fetch(`${t.url}/metrics`, { method: 'HEAD' })).status, 200);
  });

  it('counts exactly the requests sent, by route pattern, method and status, and times each', async () => {
    const ok = '{route="/products/{id}",method="GET",status="200"}';
    const missing = '{route="/products/{id}",method="GET",status="404"}';
    const timed = '{route="/products/{id}",method="GET"}';
    const before = await scrape();
    for (let i = 0; i < 7; i++) assert.equal((await t.fetch(`/v${1 + (i % 2)}/products/${1 + (i % 3)}`)).status, 200);
    for (let i = 0; i < 2; i++) assert.equal((await t.fetch('/v2/products/999999')).status, 404);
    const now = await scrape();
    const delta = (name: string, labelText: string) =>
      (sampleValue(now, name, labelText) ?? 0) - (sampleValue(before, name, labelText) ?? 0);
    assert.equal(delta('orders_http_requests_total', ok), 7);
    assert.equal(delta('orders_http_requests_total', missing), 2);
    assert.equal(delta('orders_http_request_duration_seconds_count', timed), 9);
    assert.equal(
      delta('orders_http_request_duration_seconds_bucket', `{route="/products/{id}",method="GET",le="+Inf"}`),
      9,
    );
    assert.ok(delta('orders_http_request_duration_seconds_sum', timed) > 0);
    // Buckets are cumulative.
    const counts = [...DURATION_BUCKETS.map(String), '+Inf'].map(
      (le) =>
        sampleValue(
          now,
          'orders_http_request_duration_seconds_bucket',
          `{route="/products/{id}",method="GET",le="${le}"}`,
        ) as number,
    );
    assert.deepEqual(
      counts,
      [...counts].sort((a, b) => a - b),
    );
    // The scrapes count themselves, under their own pattern.
    assert.ok(
      (sampleValue(now, 'orders_http_requests_total', '{route="/metrics",method="GET",status="200"}') ?? 0) >= 2,
    );
  });

  it('never labels with an id, a token or a raw path', async () => {
    customer = await t.user('customer');
    const secretPath = '/v1/nothing/secret-path-7f3a';
    assert.equal((await t.fetch('/v1/orders/123', { headers: bearer(customer.token) })).status, 404);
    assert.equal((await t.fetch('/v2/users/4567/orders', { headers: bearer(customer.token) })).status, 404);
    assert.equal((await fetch(`${t.url}${secretPath}`, { headers: bearer(customer.token) })).status, 404);
    assert.equal((await fetch(`${t.url}/v1/orders/9876`, { method: 'OPTIONS' })).status, 204);
    assert.equal((await fetch(`${t.url}/v1/orders/9876`, { method: 'PROPFIND' })).status, 405);
    const text = await scrape();
    assert.equal(
      sampleValue(text, 'orders_http_requests_total', '{route="/orders/{id}",method="GET",status="404"}'),
      1,
    );
    assert.equal(
      sampleValue(text, 'orders_http_requests_total', '{route="/users/{id}/orders",method="GET",status="404"}'),
      1,
    );
    assert.equal(
      sampleValue(text, 'orders_http_requests_total', '{route="/orders/{id}",method="OPTIONS",status="204"}'),
      1,
    );
    assert.equal(
      sampleValue(text, 'orders_http_requests_total', '{route="/orders/{id}",method="other",status="405"}'),
      1,
    );
    assert.ok(
      (sampleValue(text, 'orders_http_requests_total', '{route="unmatched",method="GET",status="404"}') ?? 0) >= 1,
    );
    // Sample values may hold any digits; the label sets must not.
    const labelSets = [...text.matchAll(/\{[^}]*\}/g)].map((m) => m[0]).join('\n');
    for (const leak of ['123', '4567', '9876', 'secret-path']) assert.ok(!labelSets.includes(leak), leak);
    for (const leak of [customer.token, customer.token.slice(4, 20)]) assert.ok(!text.includes(leak), 'the token');
    const patterns = new Set([...routes.map((r) => openApiPath(r.pattern)), 'unmatched']);
    for (const value of labelValues(text, 'route')) assert.ok(patterns.has(value), value);
  });

  it("gives webhook deliveries pending and failed, and the event log's age", async () => {
    admin = await t.user('admin');
    const subscribe = async (url: string) => {
      const response = await t.fetch('/v2/webhook-endpoints', {
        method: 'POST',
        headers: { ...bearer(admin.token), 'content-type': 'application/json' },
        body: JSON.stringify({ url, events: ['order.created'] }),
      });
      assert.equal(response.status, 201);
    };
    await subscribe(hanging.url);
    await subscribe(refusing.url);
    const created = await t.fetch('/v2/orders', {
      method: 'POST',
      headers: { ...bearer(customer.token), 'content-type': 'application/json' },
      body: '{"items":[{"productId":1,"qty":1}]}',
    });
    assert.equal(created.status, 201);
    await Promise.all([hanging.waitFor(1), refusing.waitFor(1)]);
    // The refused attempt is recorded just after its answer: wait for the figure.
    let text = await scrape();
    for (
      const deadline = Date.now() + 10_000;
      sampleValue(text, 'orders_webhook_deliveries', '{status="failed"}') !== 1 && Date.now() < deadline;
    )
      text = await scrape();
    assert.equal(sampleValue(text, 'orders_webhook_deliveries', '{status="failed"}'), 1);
    assert.equal(sampleValue(text, 'orders_webhook_deliveries', '{status="pending"}'), 1);
    assert.equal(sampleValue(text, 'orders_metrics_database_success'), 1);
    const age = sampleValue(text, 'orders_event_log_oldest_event_age_seconds') as number;
    assert.ok(age > 0 && age < 60, String(age));
  });

  it('gives the pool and the process figures', async () => {
    const text = await scrape();
    assert.equal(sampleValue(text, 'orders_db_pool_max_connections'), t.database.real ? 10 : 1);
    // The webhook worker polls all the while: exact figures are the next describe's, on a quiet pool.
    assert.ok([0, 1].includes(sampleValue(text, 'orders_db_pool_connections_in_use') as number));
    assert.ok((sampleValue(text, 'orders_db_pool_queries_waiting') as number) >= 0);
    assert.ok((sampleValue(text, 'process_resident_memory_bytes') as number) > 10_000_000);
    assert.ok((sampleValue(text, 'process_cpu_seconds_total') as number) > 0);
    const start = sampleValue(text, 'process_start_time_seconds') as number;
    assert.ok(start <= Date.now() / 1000 && start > Date.now() / 1000 - 3600, String(start));
  });

  it('passes promtool check metrics with no error and no warning', {
    skip: !hasPromtool && 'promtool is not installed (Debian: apt-get install prometheus); CI installs it',
  }, async () => {
    // Every kind of series: 2xx, 3xx, 4xx, unmatched, HEAD, OPTIONS, a write, a refusal.
    const etag = (await t.fetch('/v2/products/1')).headers.get('etag') as string;
    await t.fetch('/v2/products/1', { headers: { 'if-none-match': etag } });
    await t.fetch('/v2/products', { method: 'HEAD' });
    await t.fetch('/v2/orders');
    await fetch(`${t.url}/nothing`);
    const text = await scrape();
    const checked = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    assert.equal(checked.status, 0, checked.stdout + checked.stderr);
    assert.equal(checked.stdout + checked.stderr, '');
  });
});

describe('GET /metrics without METRICS_TOKEN, and a rate limit (contract §13)', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ RATE_LIMIT: '3/60' });
  });
  after(async () => {
    await t.close();
  });

  it('is limited like any anonymous request: counted against the address, then 429', async () => {
    const answers: string[] = [];
    for (let i = 0; i < 4; i++) {
      const response = await fetch(`${t.url}/metrics`);
      await response.arrayBuffer();
      answers.push(`${response.status} ${response.headers.get('ratelimit')?.replace(/;t=\d+$/, '')}`);
    }
    assert.deepEqual(answers, ['200 "default";r=2', '200 "default";r=1', '200 "default";r=0', '429 "default";r=0']);
    // The same budget as the address's other anonymous requests.
    assert.equal((await fetch(`${t.url}/v1/products/1`)).status, 429);
  });
});

describe('GET /metrics with METRICS_TOKEN and a rate limit', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ METRICS_TOKEN: TOKEN, RATE_LIMIT: '2/60' });
  });
  after(async () => {
    await t.close();
  });

  it('is 200 with the token, and a scrape is never counted against the limit', async () => {
    for (let i = 0; i < 5; i++) {
      const response = await fetch(`${t.url}/metrics`, { headers: bearer(TOKEN) });
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('ratelimit'), null);
      await response.arrayBuffer();
    }
  });

  it('counts a user\'s refusals under limiter="user"', async () => {
    const who = await t.user('customer');
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await t.fetch('/v2/orders', { headers: bearer(who.token) })).status);
    assert.deepEqual(statuses, [200, 200, 429]);
    const text = await (await fetch(`${t.url}/metrics`, { headers: bearer(TOKEN) })).text();
    assert.equal(sampleValue(text, 'orders_rate_limited_total', '{limiter="user"}'), 1);
  });

  it('is 401 without it (an anonymous request) or with another (a failed authentication of the address)', async () => {
    const missing = await fetch(`${t.url}/metrics`);
    assert.equal(missing.status, 401);
    assert.equal(missing.headers.get('content-type'), 'application/problem+json');
    assert.equal(missing.headers.get('cache-control'), 'no-store');
    assert.equal(missing.headers.get('www-authenticate'), 'Bearer realm="metrics"');
    // No credential: counted as any anonymous request of the address.
    assert.equal(missing.headers.get('ratelimit'), '"default";r=1;t=60');
    const body = await missing.json();
    assert.equal(body.type, '/problems/unauthorized');
    assert.equal(body.status, 401);
    // A wrong credential: counted in the address's failed authentications (contract §10), a window of its own.
    const wrong = await fetch(`${t.url}/metrics`, { headers: bearer(`${TOKEN}x`) });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.headers.get('www-authenticate'), 'Bearer realm="metrics", error="invalid_token"');
    assert.equal(wrong.headers.get('ratelimit'), '"default";r=1;t=60');
    const again = await fetch(`${t.url}/metrics`, { headers: bearer('not-the-token-at-all') });
    assert.equal(again.status, 401);
    assert.equal(again.headers.get('ratelimit'), '"default";r=0;t=60');
    const limited = await fetch(`${t.url}/metrics`, { headers: bearer('not-the-token-at-all') });
    assert.equal(limited.status, 429);
    // Past the limit, the right token still passes: failed authentications never lock out the honest (§10).
    assert.equal((await fetch(`${t.url}/metrics`, { headers: bearer(TOKEN) })).status, 200);
    const text = t.server.metrics.render();
    assert.equal(sampleValue(text, 'orders_rate_limited_total', '{limiter="address"}'), 1);
    assert.equal(sampleValue(text, 'orders_http_requests_total', '{route="/metrics",method="GET",status="401"}'), 3);
    assert.equal(sampleValue(text, 'orders_http_requests_total', '{route="/metrics",method="GET",status="429"}'), 1);
  });
});

describe('GET /metrics while the pool is busy', () => {
  let t: TestServer;
  let database: TestDatabase;
  let release: () => void = () => {};
  let held: () => void = () => {};
  const inside = new Promise<void>((resolve) => {
    held = resolve;
  });
  before(async () => {
    // One connection, held by a payment's transaction until the test lets it go;
    // the webhook worker polls once, at start, so that nothing else uses the pool.
    // Every scrape reads the database's figures (the next describe keeps them). No read replica, even in a run
    // with one: its monitor asks the primary's pool where it is every second, which a scrape would count in use.
    database = await createTestDatabase();
    t = await startTestServer(
      { DB_POOL_MAX: '1', DATABASE_URL: database.url },
      database,
      {
        metricsDatabaseMaxAgeMs: 0,
        afterPaymentInsert: () => {
          held();
          return new Promise<void>((resolve) => {
            release = resolve;
          });
        },
      },
      { pollMs: 3_600_000 },
    );
  });
  after(async () => {
    release();
    await t.close();
    await database.drop();
  });

  it('shows the connection in use; the figures come on their own connection, or the deadline passes', async () => {
    const who = await t.user('customer');
    const order = await (
      await t.fetch('/v1/orders', {
        method: 'POST',
        headers: { ...bearer(who.token), 'content-type': 'application/json' },
        body: '{"items":[{"productId":1,"qty":2}]}',
      })
    ).json();
    const idle = await (await fetch(`${t.url}/metrics`)).text();
    assert.equal(sampleValue(idle, 'orders_db_pool_connections_in_use'), 0);
    assert.equal(sampleValue(idle, 'orders_db_pool_queries_waiting'), 0);
    const paying = t.fetch('/v1/payments', {
      method: 'POST',
      headers: { ...bearer(who.token), 'content-type': 'application/json', 'idempotency-key': 'metrics-pool' },
      body: JSON.stringify({ orderId: order.id, amount: order.total, currency: order.currency }),
    });
    await inside;
    const started = performance.now();
    const response = await fetch(`${t.url}/metrics`);
    const elapsed = performance.now() - started;
    const text = await response.text();
    assert.equal(response.status, 200);
    assert.equal(sampleValue(text, 'orders_db_pool_max_connections'), 1);
    assert.equal(sampleValue(text, 'orders_db_pool_connections_in_use'), 1);
    assert.equal(sampleValue(text, 'orders_db_pool_queries_waiting'), 0);
    if (t.database.real) {
      // The figures' statement goes on the operations connection, not behind the payment: the scrape has them (a
      // wait for the pool's connection would have passed the 1 s deadline and left them out).
      assert.equal(sampleValue(text, 'orders_metrics_database_success'), 1);
      assert.equal(sampleValue(text, 'orders_webhook_deliveries', '{status="pending"}'), 0);
    } else {
      // The embedded database's one connection: the scrape waits its deadline, then answers without the figures.
      assert.equal(sampleValue(text, 'orders_metrics_database_success'), 0);
      assert.equal(sampleValue(text, 'orders_webhook_deliveries', '{status="pending"}'), undefined);
      assert.equal(sampleValue(text, 'orders_event_log_oldest_event_age_seconds'), undefined);
      // At least the 1 s it waits for the connection; at most 3 s on a quiet machine, times TIME_SLACK
      // (test/support/time.ts): it still catches a /metrics that waits for the pool until the payment ends.
      assert.ok(elapsed >= 1_000 && elapsed < slack(3_000), `${elapsed} ms`);
    }
    release();
    assert.equal((await paying).status, 201);
    const after = await (await fetch(`${t.url}/metrics`)).text();
    assert.equal(sampleValue(after, 'orders_metrics_database_success'), 1);
  });
});

describe("GET /metrics keeps the database's figures 10 s", () => {
  let t: TestServer;
  let release: () => void = () => {};
  let held: () => void = () => {};
  const inside = new Promise<void>((resolve) => {
    held = resolve;
  });
  before(async () => {
    // As above: one connection, held by a payment until the test lets it go; the figures kept 10 s (the default).
    t = await startTestServer(
      { DB_POOL_MAX: '1' },
      undefined,
      {
        afterPaymentInsert: () => {
          held();
          return new Promise<void>((resolve) => {
            release = resolve;
          });
        },
      },
      { pollMs: 3_600_000 },
    );
  });
  after(async () => {
    release();
    await t.close();
  });

  it('repeats the last read within 10 s: a new event is not seen, and a busy pool holds no scrape', async () => {
    const first = await (await fetch(`${t.url}/metrics`)).text();
    assert.equal(sampleValue(first, 'orders_metrics_database_success'), 1);
    assert.equal(sampleValue(first, 'orders_event_log_oldest_event_age_seconds'), 0);
    const who = await t.user('customer');
    const created = await t.fetch('/v1/orders', {
      method: 'POST',
      headers: { ...bearer(who.token), 'content-type': 'application/json' },
      body: '{"items":[{"productId":1,"qty":2}]}',
    });
    assert.equal(created.status, 201);
    const order = await created.json();
    // The log now holds an event, and the only connection is taken: a read would see the one, and wait 1 s.
    const paying = t.fetch('/v1/payments', {
      method: 'POST',
      headers: { ...bearer(who.token), 'content-type': 'application/json', 'idempotency-key': 'metrics-kept' },
      body: JSON.stringify({ orderId: order.id, amount: order.total, currency: order.currency }),
    });
    await inside;
    const started = performance.now();
    const kept = await (await fetch(`${t.url}/metrics`)).text();
    const elapsed = performance.now() - started;
    // Under the 1 s a read would wait: no TIME_SLACK here (test/support/time.ts), which would hide that wait.
    assert.ok(elapsed < 1_000, `${elapsed} ms`);
    assert.equal(sampleValue(kept, 'orders_db_pool_connections_in_use'), 1);
    assert.equal(sampleValue(kept, 'orders_metrics_database_success'), 1);
    assert.equal(sampleValue(kept, 'orders_event_log_oldest_event_age_seconds'), 0);
    assert.equal(sampleValue(kept, 'orders_webhook_deliveries', '{status="pending"}'), 0);
    release();
    assert.equal((await paying).status, 201);
  });
});
