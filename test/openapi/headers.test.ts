/**
 * The OpenAPI document's headers against the wire (contract §16): for a sample
 * of answers of every status family, on version 1 and version 2, every
 * field the running server sent (beyond those of any HTTP message) is
 * documented for that operation and status in GET /openapi.json; and the
 * fields the document says are on every answer (X-Request-Id, the
 * rate-limit fields, version 1's deprecation fields) are there.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { METHODS } from '../../src/http/router.ts';
import { createTestDatabase, REAL_SERVER_URL, type TestDatabase } from '../support/database.ts';
import { proxyToDatabase, type DatabaseProxy, type TcpProxy } from '../support/proxy.ts';
import { bearer, startTestServer, type Account, type TestServer } from '../support/server.ts';

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document, walked generically as untyped JSON
type Json = Record<string, any>;

/** Fields of any HTTP message, which the document does not repeat per response. */
const GENERIC = new Set(['content-length', 'content-type', 'date', 'connection', 'keep-alive', 'transfer-encoding']);
/** What the document says every answer carries (RATE_LIMIT on), and every version 1 answer. */
const EVERYWHERE = ['x-request-id', 'ratelimit', 'ratelimit-policy'];
const VERSION_1 = ['deprecation', 'sunset', 'link'];

interface Sample {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  /** The field names sent, lower case. */
  readonly fields: readonly string[];
}

/** Every answer sampled, for the check that each family was seen on both versions. */
const seen: Sample[] = [];
let document: Json;

/** Sends the request through `server` (so the contract check sees it too) and records its answer. */
async function answer(server: TestServer, path: string, init: RequestInit = {}): Promise<Sample> {
  const response = await server.fetch(path, init);
  await response.arrayBuffer();
  const sample = { method: init.method ?? 'GET', path, status: response.status, fields: [...response.headers.keys()] };
  seen.push(sample);
  return sample;
}

/** The path item of the document that `path` (a concrete path) falls under: the one with the fewest parameters. */
function pathItem(path: string): [string, Json] | undefined {
  const params = (template: string) => (template.match(/\{/g) ?? []).length;
  const matching = Object.keys(document.paths)
    .filter((template) => new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(path))
    .sort((a, b) => params(a) - params(b));
  return matching[0] === undefined ? undefined : [matching[0], document.paths[matching[0]]];
}

/** `object`, or the entry of `components` its `$ref` names (responses and header fields are shared there). */
function resolved(object: Json | undefined): Json | undefined {
  const ref = object?.$ref;
  if (typeof ref !== 'string') return object;
  const [, , kind, name] = ref.split('/') as [string, string, string, string];
  return document.components[kind][name];
}

/** The names (lower case) of the fields `response` says are on every such answer (`required: true`). */
function requiredFields(response: Json): string[] {
  return Object.entries(response.headers ?? {})
    .filter(([, field]) => resolved(field as Json)?.required === true)
    .map(([name]) => name.toLowerCase());
}

/**
 * The fields of `sample` that the document does not list for its operation
 * and status, and the fields it says are on every such answer that `sample`
 * lacks, one line each (`excused`: fields configured away for this server,
 * such as the rate-limit fields of a CORS preflight). An answer of a method
 * the path does not take (405) is held against every operation of the path
 * that lists 405.
 */
function undocumented(sample: Sample, excused: readonly string[] = []): string[] {
  const at = `${sample.method} ${sample.path} → ${sample.status}`;
  const found = pathItem(sample.path.split('?')[0] as string);
  if (found === undefined) return [`${at}: no path of the document`];
  const [template, item] = found;
  const own = item[sample.method.toLowerCase()];
  const operations: [string, Json][] =
    own === undefined
      ? Object.entries(item).filter(([, op]) => op.responses[String(sample.status)] !== undefined)
      : [[sample.method.toLowerCase(), own]];
  if (operations.length === 0) return [`${at}: no operation of ${template} lists ${sample.status}`];
  const lines: string[] = [];
  for (const [method, op] of operations) {
    const response = resolved(op.responses[String(sample.status)]);
    if (response === undefined) {
      lines.push(`${at}: ${method} ${template} does not list ${sample.status}`);
      continue;
    }
    const documented = new Set(Object.keys(response.headers ?? {}).map((name) => name.toLowerCase()));
    for (const field of sample.fields) {
      if (!GENERIC.has(field) && !documented.has(field))
        lines.push(`${at}: ${field} is not documented for ${method} ${template} ${sample.status}`);
    }
    for (const field of requiredFields(response)) {
      if (!sample.fields.includes(field) && !excused.includes(field))
        lines.push(`${at}: lacks ${field}, required for ${method} ${template} ${sample.status}`);
    }
  }
  return lines;
}

/** The fields the document promises on every answer that `sample` lacks. */
function missing(sample: Sample, { rateLimited = true } = {}): string[] {
  const expected = [...(rateLimited ? EVERYWHERE : ['x-request-id'])];
  // Refused while the body was read, before the path (and so the version) was known: contract §8's fields are not sent.
  if (sample.path.startsWith('/v1/') && sample.status !== 413) expected.push(...VERSION_1);
  return expected
    .filter((name) => !sample.fields.includes(name))
    .map((name) => `${sample.method} ${sample.path} → ${sample.status} lacks ${name}`);
}

function assertDocumented(
  samples: readonly Sample[],
  statuses: readonly number[],
  options?: { rateLimited?: boolean },
): void {
  assert.deepEqual(
    samples.map((s) => `${s.method} ${s.path} → ${s.status}`),
    samples.map((s, i) => `${s.method} ${s.path} → ${statuses[i]}`),
  );
  // Not counted (a CORS preflight), an answer lacks the rate-limit fields the default configuration sends.
  const excused = options?.rateLimited === false ? ['ratelimit', 'ratelimit-policy'] : [];
  assert.deepEqual(
    samples.flatMap((s) => undocumented(s, excused)),
    [],
  );
  assert.deepEqual(
    samples.flatMap((s) => missing(s, options)),
    [],
  );
}

const json = (token: string, body: unknown, extra: Record<string, string> = {}): RequestInit => ({
  headers: { ...bearer(token), 'content-type': 'application/json', ...extra },
  body: JSON.stringify(body),
});

describe('the headers of GET /openapi.json against the wire', () => {
  let t: TestServer;
  let customer: Account;
  let reader: Account;
  let failPayments = false;

  before(async () => {
    // The production default: every answer carries the rate-limit fields.
    t = await startTestServer({ RATE_LIMIT: '600/60' }, undefined, {
      async afterPaymentInsert() {
        if (failPayments) throw new Error('a bug, injected by the test');
      },
    });
    document = await (await t.fetch('/openapi.json')).json();
    customer = await t.user('customer');
    reader = await t.user('customer', ['orders:read']);
  });
  after(async () => {
    await t.close();
  });

  /** A new pending order of the customer (v1 answers its total as a number). */
  async function order(): Promise<{ id: number; total: number }> {
    const response = await t.fetch('/v1/orders', {
      method: 'POST',
      ...json(customer.token, { items: [{ productId: 1, qty: 2 }] }),
    });
    assert.equal(response.status, 201);
    return response.json();
  }
  const payment = (version: 1 | 2, o: { id: number; total: number }) =>
    version === 1
      ? { orderId: o.id, amount: o.total, currency: 'EUR' }
      : { orderId: o.id, amount: { amount: o.total.toFixed(2), currency: 'EUR' } };

  for (const v of [1, 2] as const) {
    describe(`version ${v}`, () => {
      it('2xx: read, listed, created, replayed, deleted, and OPTIONS', async () => {
        const auth = { headers: bearer(customer.token) };
        const body = { items: [{ productId: 1, qty: 1 }] };
        const created = await answer(t, `/v${v}/orders`, {
          method: 'POST',
          ...json(customer.token, body, { 'idempotency-key': `headers-${v}` }),
        });
        const replayed = await answer(t, `/v${v}/orders`, {
          method: 'POST',
          ...json(customer.token, body, { 'idempotency-key': `headers-${v}` }),
        });
        assert.ok(replayed.fields.includes('idempotent-replayed'));
        const o = await order();
        const samples = [
          await answer(t, `/v${v}/products/1`),
          await answer(t, `/v${v}/products/1`, { method: 'HEAD' }),
          await answer(t, `/v${v}/orders?pageSize=1`, auth),
          await answer(t, `/v${v}/orders/${o.id}`, auth),
          await answer(t, `/v${v}/events`, auth),
          created,
          replayed,
          await answer(t, `/v${v}/payments`, {
            method: 'POST',
            ...json(customer.token, payment(v, o), { 'idempotency-key': `pay-${v}` }),
          }),
          await answer(t, `/v${v}/orders/${(await order()).id}`, { method: 'DELETE', ...auth }),
          await answer(t, `/v${v}/orders/${o.id}`, { method: 'OPTIONS' }),
        ];
        assertDocumented(samples, [200, 200, 200, 200, 200, 201, 201, 201, 204, 204]);
      });

      it("3xx: 304 from the bytes and from an order's revision", async () => {
        const auth = bearer(customer.token);
        const o = await order();
        const productTag = (await t.fetch(`/v${v}/products/1`)).headers.get('etag') as string;
        const orderTag = (await t.fetch(`/v${v}/orders/${o.id}`, { headers: auth })).headers.get('etag') as string;
        const samples = [
          await answer(t, `/v${v}/products/1`, { headers: { 'if-none-match': productTag } }),
          await answer(t, `/v${v}/orders/${o.id}`, { headers: { ...auth, 'if-none-match': orderTag } }),
          await answer(t, `/v${v}/orders/${o.id}`, { method: 'HEAD', headers: { ...auth, 'if-none-match': orderTag } }),
        ];
        assertDocumented(samples, [304, 304, 304]);
      });

      it('4xx: every refusal the pipeline and the handlers make', async () => {
        const auth = bearer(customer.token);
        const o = await order();
        const paid = await order();
        await t.fetch(`/v${v}/payments`, {
          method: 'POST',
          ...json(customer.token, payment(v, paid), { 'idempotency-key': `paid-${v}` }),
        });
        const again = {
          method: 'POST',
          ...json(customer.token, payment(v, paid), { 'idempotency-key': `again-${v}` }),
        };
        const samples = [
          await answer(t, `/v${v}/orders?colour=red`, { headers: auth }),
          await answer(t, `/v${v}/orders`),
          await answer(t, `/v${v}/orders`, { headers: bearer('ord_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA') }),
          await answer(t, `/v${v}/orders`, {
            method: 'POST',
            ...json(reader.token, { items: [{ productId: 1, qty: 1 }] }),
          }),
          await answer(t, `/v${v}/orders/999999999`, { headers: auth }),
          await answer(t, `/v${v}/products/1`, { method: 'DELETE' }),
          await answer(t, `/v${v}/products/1`, { headers: { accept: 'text/html' } }),
          await answer(t, `/v${v}/payments`, again),
          // The same refusal again: the stored result, replayed (contract §7).
          await answer(t, `/v${v}/payments`, again),
          await answer(t, `/v${v}/orders/${o.id}`, {
            method: 'PUT',
            ...json(
              customer.token,
              { customerId: customer.id, status: 'pending', items: [{ productId: 1, qty: 1 }] },
              { 'if-match': '"stale"' },
            ),
          }),
          await answer(t, `/v${v}/orders`, {
            method: 'POST',
            headers: { ...auth, 'content-type': 'application/json' },
            body: 'x'.repeat(1_048_577),
          }),
          await answer(t, `/v${v}/orders/${o.id}`, {
            method: 'PATCH',
            headers: { ...auth, 'content-type': 'text/plain' },
            body: 'x',
          }),
          await answer(t, `/v${v}/orders`, { method: 'POST', ...json(customer.token, { items: [] }) }),
        ];
        assertDocumented(samples, [400, 401, 401, 403, 404, 405, 406, 409, 409, 412, 413, 415, 422]);
        assert.ok(samples[8]!.fields.includes('idempotent-replayed'));
        assert.ok(samples[2]!.fields.includes('www-authenticate') && samples[3]!.fields.includes('www-authenticate'));
      });

      it('5xx: 500 for a bug', async () => {
        const o = await order();
        failPayments = true;
        try {
          const samples = [
            await answer(t, `/v${v}/payments`, {
              method: 'POST',
              ...json(customer.token, payment(v, o), { 'idempotency-key': `bug-${v}` }),
            }),
          ];
          assertDocumented(samples, [500]);
        } finally {
          failPayments = false;
        }
      });
    });
  }

  it('outside the versions: health, readiness and the document, with 304', async () => {
    const tag = (await t.fetch('/healthz')).headers.get('etag') as string;
    // contract §10: health checks are never rate limited, and carry no rate-limit fields.
    const probes = [
      await answer(t, '/healthz'),
      await answer(t, '/healthz', { headers: { 'if-none-match': tag } }),
      await answer(t, '/readyz'),
    ];
    assertDocumented(probes, [200, 304, 200], { rateLimited: false });
    assert.deepEqual(
      probes.filter((p) => p.fields.includes('ratelimit') || p.fields.includes('ratelimit-policy')),
      [],
    );
    const samples = [
      await answer(t, '/openapi.json', { method: 'HEAD' }),
      await answer(t, '/healthz', { method: 'OPTIONS' }),
      // Refused before its route is found, a health check's 405 is counted like any request.
      await answer(t, '/healthz', { method: 'DELETE' }),
    ];
    assertDocumented(samples, [200, 204, 405]);
  });

  it('the pages, the metrics and the document: each media type, coded and not, HEAD, and 304', async () => {
    const coded = (coding: string, extra: Record<string, string> = {}) => ({
      headers: { 'accept-encoding': coding, ...extra },
    });
    const tagOf = async (path: string, init: RequestInit = {}) =>
      (await t.fetch(path, init)).headers.get('etag') as string;
    const json = { accept: 'application/json' };
    const samples = [
      await answer(t, '/', coded('identity')),
      await answer(t, '/docs', coded('gzip')),
      await answer(t, '/docs/swagger-ui.css', coded('br')),
      await answer(t, '/docs/favicon-32x32.png', coded('gzip')),
      await answer(t, '/docs/init.js', { method: 'HEAD' }),
      await answer(t, '/problems/not-found'),
      await answer(t, '/problems/not-found', { headers: { accept: 'text/markdown' } }),
      await answer(t, '/problems/not-found', coded('gzip', json)),
      await answer(t, '/metrics', coded('gzip')),
      await answer(t, '/openapi.json', coded('gzip')),
      await answer(t, '/v2/products', coded('br')),
      await answer(t, '/', { headers: { 'if-none-match': await tagOf('/') } }),
      await answer(t, '/docs', coded('gzip', { 'if-none-match': await tagOf('/docs', coded('gzip')) })),
      await answer(t, '/problems/not-found', {
        headers: { ...json, 'if-none-match': await tagOf('/problems/not-found', { headers: json }) },
      }),
      await answer(t, '/openapi.json', coded('gzip', { 'if-none-match': await tagOf('/openapi.json', coded('gzip')) })),
    ];
    assertDocumented(samples, [200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 304, 304, 304, 304]);
    // The big answers went coded: Content-Encoding, and its ETag, are checked against the document too.
    for (const i of [2, 9]) assert.ok(samples[i]!.fields.includes('content-encoding'), samples[i]!.path);
  });

  it('OPTIONS on every path of the document: 204 with the Allow it documents, every field documented', async () => {
    const lines: string[] = [];
    for (const [template, item] of Object.entries(document.paths as Json)) {
      const path = template.replace(/\{[^}]+\}/g, '1');
      const response = await t.fetch(path, { method: 'OPTIONS' });
      const sample = { method: 'OPTIONS', path, status: response.status, fields: [...response.headers.keys()] };
      const methods = METHODS.filter((m) => item[m.toLowerCase()] !== undefined).join(', ');
      if (response.status !== 204 || response.headers.get('allow') !== methods)
        lines.push(`OPTIONS ${path}: ${response.status} Allow ${response.headers.get('allow')}, documented ${methods}`);
      if (
        item.patch !== undefined &&
        response.headers.get('accept-patch') !== 'application/json, application/merge-patch+json'
      )
        lines.push(`OPTIONS ${path}: Accept-Patch ${response.headers.get('accept-patch')}`);
      lines.push(...undocumented(sample), ...missing(sample));
    }
    assert.deepEqual(lines, []);
  });
});

describe('the headers of a 429', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ RATE_LIMIT: '1/60' });
  });
  after(async () => {
    await t.close();
  });

  it('lists Retry-After and the rate-limit fields, on both versions', async () => {
    await t.fetch('/v2/products/1');
    const samples = [
      await answer(t, '/v1/products/1'),
      await answer(t, '/v2/products/1'),
      await answer(t, '/v2/orders/1', { method: 'OPTIONS' }),
    ];
    assertDocumented(samples, [429, 429, 429]);
    assert.ok(samples.every((s) => s.fields.includes('retry-after')));
  });
});

describe('the headers of a 410, a 503 and a CORS preflight', () => {
  let database: TestDatabase;
  let link: DatabaseProxy;
  let proxy: TcpProxy;
  let t: TestServer;

  before(async () => {
    database = await createTestDatabase();
    link = await proxyToDatabase(database, 10);
    proxy = link.proxy;
    t = await startTestServer(
      {
        DATABASE_URL: link.url,
        RATE_LIMIT: '600/60',
        V1_DEPRECATED_AT: '2020-01-01T00:00:00Z',
        V1_SUNSET_AT: '2021-01-01T00:00:00Z',
        CORS_ORIGINS: 'https://app.example',
      },
      database,
    );
  });
  after(async () => {
    await t.close();
    await link.close();
    await database.drop();
  });

  it('410 on version 1 past its sunset', async () => {
    assertDocumented([await answer(t, '/v1/products/1', { headers: { origin: 'https://elsewhere.example' } })], [410]);
  });

  it('a CORS preflight from a listed origin', async () => {
    const preflight = {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'PATCH',
        'access-control-request-headers': 'authorization, if-match',
      },
    };
    // A preflight is not counted against the rate limit: it carries no rate-limit fields.
    assertDocumented(
      [await answer(t, '/v2/orders/1', preflight), await answer(t, '/v1/orders/1', preflight)],
      [204, 204],
      { rateLimited: false },
    );
  });

  it('503 while the database is away, with Retry-After', async () => {
    await proxy.down();
    const samples = [await answer(t, '/v2/products/1'), await answer(t, '/readyz')];
    assertDocumented(samples.slice(0, 1), [503]);
    assertDocumented(samples.slice(1), [503], { rateLimited: false });
    assert.ok(samples.every((s) => s.fields.includes('retry-after')));
    await proxy.up();
  });
});

describe('the headers of a 409 idempotency-key-in-use', {
  skip: REAL_SERVER_URL ? false : 'needs a real PostgreSQL server: the embedded one runs one transaction at a time',
}, () => {
  let t: TestServer;
  let customer: Account;
  before(async () => {
    t = await startTestServer({ RATE_LIMIT: '600/60' });
    customer = await t.user('customer');
  });
  after(async () => {
    await t.close();
  });

  it('lists Retry-After, on both versions', async () => {
    const samples: Sample[] = [];
    const ROLLBACK = new Error('rollback');
    // Holds the key's lock as a request still running would (src/pipeline/idempotency.ts).
    await assert.rejects(
      t.server.db.begin(async (tx) => {
        await tx.one('ClaimIdempotencyKey', [customer.id, 'held']);
        for (const v of [1, 2]) {
          samples.push(
            await answer(t, `/v${v}/orders`, {
              method: 'POST',
              ...json(customer.token, { items: [{ productId: 1, qty: 1 }] }, { 'idempotency-key': 'held' }),
            }),
          );
        }
        throw ROLLBACK;
      }),
      (error) => error === ROLLBACK,
    );
    assertDocumented(samples, [409, 409]);
    assert.ok(samples.every((s) => s.fields.includes('retry-after')));
  });
});

describe('the sample', () => {
  it('holds every status family on both versions', () => {
    const families = new Set(
      seen.map((s) => `${String(s.status)[0]}xx ${s.path.match(/^\/v[12]\//)?.[0] ?? 'unversioned'}`),
    );
    for (const family of ['2xx', '3xx', '4xx', '5xx']) {
      for (const version of ['/v1/', '/v2/'])
        assert.ok(families.has(`${family} ${version}`), `${family} on ${version}`);
    }
  });
});
