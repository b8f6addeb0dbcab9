/**
 * The OpenAPI document (issue 6): valid per an established validator, in
 * step with the router both ways, and the contract check that every HTTP
 * test response goes through.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import SwaggerParser from '@apidevtools/swagger-parser';
import { createRouter } from '../../src/http/router.ts';
import { buildOpenApi } from '../../src/openapi/document.ts';
import { openApiPath } from '../../src/openapi/parameters.ts';
import { routes } from '../../src/service/routes.ts';
import { createContract } from '../support/contract.ts';
import { bearer, contract, startTestServer, type TestServer } from '../support/server.ts';

let t: TestServer;
// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document, walked generically as untyped JSON
type Json = Record<string, any>;
let document: Json;
/** The document with every shared response, parameter and field written where it is used, as a reader sees it. */
let inlined: Json;
before(async () => {
  t = await startTestServer();
  const response = await t.fetch('/openapi.json');
  assert.equal(response.status, 200);
  assert.equal(response.headers.get('content-type'), 'application/json');
  document = await response.json();
  inlined = inline(document);
});
after(async () => {
  await t.close();
});

const METHODS = ['get', 'head', 'post', 'put', 'patch', 'delete'];

/** `document` with each `$ref` to `components.responses`, `.parameters` or `.headers` replaced by what it names. */
function inline(document: Json): Json {
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk);
    if (value === null || typeof value !== 'object') return value;
    const ref = (value as Json).$ref;
    const shared = typeof ref === 'string' && /^#\/components\/(responses|parameters|headers)\//.test(ref);
    if (shared) {
      const [, , kind, name] = ref.split('/') as [string, string, string, string];
      return walk(document.components[kind][name]);
    }
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, walk(inner)]));
  };
  return { ...document, paths: walk(document.paths) };
}

describe('GET /openapi.json', () => {
  it('is the document built from the routes, without a token', () => {
    assert.deepEqual(document, JSON.parse(JSON.stringify(buildOpenApi(routes))));
    assert.equal(document.openapi, '3.1.0');
  });

  it('passes an established OpenAPI validator (@apidevtools/swagger-parser)', async () => {
    await SwaggerParser.validate(structuredClone(document) as never);
  });

  it('documents every route the router knows, in both versions, and HEAD for every GET', () => {
    for (const route of routes) {
      const prefixes = route.versioned === false ? [''] : ['/v1', '/v2'];
      for (const prefix of prefixes) {
        const item = document.paths[`${prefix}${openApiPath(route.pattern)}`];
        assert.ok(item?.[route.method.toLowerCase()], `${route.method} ${prefix}${route.pattern}`);
        if (route.method === 'GET') assert.ok(item.head, `HEAD ${prefix}${route.pattern}`);
        const op = item[route.method.toLowerCase()];
        assert.deepEqual(op.security, route.auth === 'public' ? [] : [{ bearer: [route.auth] }]);
        assert.equal(op.deprecated === true, prefix === '/v1');
      }
    }
  });

  it('routes every documented operation to the route it documents', () => {
    const router = createRouter(
      routes.map((r) => ({
        method: r.method,
        pattern: r.pattern,
        handler: r,
        ...(r.versioned === undefined ? {} : { versioned: r.versioned }),
      })),
    );
    let operations = 0;
    for (const [path, item] of Object.entries(document.paths)) {
      for (const method of Object.keys(item as object).filter((m) => METHODS.includes(m))) {
        operations += 1;
        const concrete = path.replace(/\{[a-zA-Z]+\}/g, '1');
        const match = router.match(method.toUpperCase(), concrete);
        assert.equal(match.kind, 'found', `${method} ${path}`);
        if (match.kind === 'found') assert.equal(openApiPath(match.handler.pattern), path.replace(/^\/v[12]/, ''));
      }
    }
    const routed = routes.reduce((n, r) => n + (r.versioned === false ? 1 : 2) * (r.method === 'GET' ? 2 : 1), 0);
    assert.equal(operations, routed);
  });

  it('documents every query parameter a collection accepts, with its rules', () => {
    const list = inlined.paths['/v2/orders'].get.parameters.filter((p: { in: string }) => p.in === 'query');
    assert.deepEqual(
      list.map((p: { name: string }) => p.name),
      ['page', 'pageSize', 'sort', 'cursor', 'status', 'customerId', 'minTotal'],
    );
    assert.deepEqual(list[1].schema, { type: 'integer', minimum: 1, maximum: 100, default: 20 });
    assert.match('-total,id', new RegExp(list[2].schema.pattern));
    assert.doesNotMatch('price', new RegExp(list[2].schema.pattern));
  });

  it('documents the problem types, the headers and the idempotency key', () => {
    const pay = inlined.paths['/v2/payments'].post;
    assert.match(pay.responses['409'].description, /\/problems\/order-not-payable/);
    assert.match(pay.responses['409'].description, /\/problems\/idempotency-key-in-use/);
    assert.ok(pay.responses['409'].headers['Retry-After']);
    assert.ok(pay.responses['201'].headers['Idempotent-Replayed']);
    assert.ok(pay.responses['201'].headers.Location);
    assert.equal(pay.parameters.find((p: { name: string }) => p.name === 'Idempotency-Key').required, true);
    assert.deepEqual(Object.keys(pay.requestBody.content), ['application/json', 'application/vnd.orders.v2+json']);
    assert.equal(pay.requestBody.content['application/json'].schema.$ref, '#/components/schemas/NewPaymentV2');
    const v1 = inlined.paths['/v1/orders/{id}'].get.responses['200'].headers;
    for (const h of ['ETag', 'Deprecation', 'Sunset', 'Link', 'RateLimit', 'RateLimit-Policy']) assert.ok(v1[h], h);
    assert.ok(inlined.paths['/v1/orders/{id}'].patch.parameters.some((p: { name: string }) => p.name === 'If-Match'));
    assert.ok(inlined.paths['/v1/orders/{id}'].patch.responses['412']);
    assert.equal(document.components.securitySchemes.bearer.scheme, 'bearer');
  });
});

/** The fields of a response's `headers`, each `Name`, or `Name (required)` when on every such answer. */
const described = (headers: Record<string, { required?: boolean }>): string[] =>
  Object.entries(headers).map(([name, field]) => (field.required === true ? `${name} (required)` : name));

describe('the completeness of the document (contract §16)', () => {
  /** Every operation of the document, OPTIONS included, with its path and method. */
  const operations = () =>
    Object.entries(inlined.paths as Record<string, Json>).flatMap(([path, item]) =>
      Object.entries(item).map(([method, op]) => ({ where: `${method} ${path}`, path, method, op })),
    );

  it('gives every operation a description', () => {
    assert.deepEqual(
      operations()
        .filter(({ op }) => typeof op.description !== 'string' || op.description.trim() === '')
        .map(({ where }) => where),
      [],
    );
  });

  it('refuses, at start-up, a route without a description', () => {
    const route = routes.find((r) => r.pattern === '/products/{id:int}')!;
    const { description: _, ...doc } = route.doc;
    assert.throws(() => buildOpenApi([{ ...route, doc }]), {
      name: 'OpenApiError',
      message: 'GET /products/{id:int}: doc.description is missing (every operation needs one)',
    });
  });

  it('describes OPTIONS on every path: public, 204 with Allow, and Accept-Patch where PATCH is', () => {
    for (const [path, item] of Object.entries(inlined.paths as Record<string, Json>)) {
      const options = item.options;
      assert.ok(options, `OPTIONS ${path}`);
      assert.deepEqual(options.security, [], path);
      assert.deepEqual(Object.keys(options.responses), ['204', '429', '500'], path);
      const fields = Object.keys(options.responses['204'].headers);
      assert.ok(fields.includes('Allow'), path);
      assert.equal(fields.includes('Accept-Patch'), item.patch !== undefined, path);
    }
    assert.deepEqual(described(inlined.paths['/v2/orders/{id}'].options.responses['204'].headers), [
      'Allow (required)',
      'Accept-Patch (required)',
      'X-Request-Id (required)',
      'RateLimit (required)',
      'RateLimit-Policy (required)',
      'Vary',
      'Access-Control-Allow-Origin',
      'Access-Control-Expose-Headers',
      'Access-Control-Allow-Methods',
      'Access-Control-Allow-Headers',
      'Access-Control-Max-Age',
    ]);
  });

  it('lists X-Request-Id, rate-limit fields and Vary on every response; the v1 fields on every routed v1 one', () => {
    const lacking: string[] = [];
    for (const { where, path, op } of operations()) {
      for (const [status, response] of Object.entries(
        op.responses as Record<string, { headers: Record<string, unknown> }>,
      )) {
        // contract §10: health checks are never rate limited (but a 405 comes before the route is known).
        const probe = (path === '/healthz' || path === '/readyz') && status !== '405';
        const expected = ['X-Request-Id', 'Vary', 'Access-Control-Allow-Origin'];
        if (!probe || where.startsWith('options ')) expected.push('RateLimit', 'RateLimit-Policy');
        // contract §11: a body is read (408, 413) once the request is routed, so the version is known then too.
        if (path.startsWith('/v1/')) expected.push('Deprecation', 'Sunset', 'Link');
        for (const name of expected) if (!(name in response.headers)) lacking.push(`${where} ${status} ${name}`);
      }
    }
    assert.deepEqual(lacking, []);
    assert.deepEqual(described(inlined.paths['/v1/orders'].post.responses['413'].headers), [
      'X-Request-Id (required)',
      'Cache-Control (required)',
      'RateLimit (required)',
      'RateLimit-Policy (required)',
      'Vary (required)',
      'Access-Control-Allow-Origin',
      'Access-Control-Expose-Headers',
      'Deprecation (required)',
      'Sunset (required)',
      'Link (required)',
      'Content-Encoding',
    ]);
  });

  it('lists Retry-After on 429, 503, 409 in-use; WWW-Authenticate on 401, 403; Idempotent-Replayed on replays', () => {
    const fieldsOf = (path: string, method: string, status: string) =>
      Object.keys(inlined.paths[path][method].responses[status].headers);
    for (const version of ['/v1', '/v2']) {
      assert.ok(fieldsOf(`${version}/orders`, 'get', '429').includes('Retry-After'));
      assert.ok(fieldsOf(`${version}/orders`, 'get', '503').includes('Retry-After'));
      assert.ok(fieldsOf(`${version}/orders`, 'post', '409').includes('Retry-After'));
      assert.ok(fieldsOf(`${version}/orders`, 'get', '401').includes('WWW-Authenticate'));
      assert.ok(fieldsOf(`${version}/orders`, 'get', '403').includes('WWW-Authenticate'));
      assert.ok(fieldsOf(`${version}/payments`, 'post', '409').includes('Idempotent-Replayed'));
      assert.ok(fieldsOf(`${version}/payments`, 'post', '422').includes('Idempotent-Replayed'));
      assert.ok(
        !fieldsOf(`${version}/orders`, 'post', '409').includes('Idempotent-Replayed'),
        'POST /orders has no 409 of its own to replay',
      );
      assert.ok(fieldsOf(`${version}/orders/{id}`, 'patch', '415').includes('Accept-Patch'));
      assert.ok(!fieldsOf(`${version}/orders/{id}`, 'put', '415').includes('Accept-Patch'));
    }
    const describedOf = (path: string, method: string, status: string) =>
      described(inlined.paths[path][method].responses[status].headers);
    assert.deepEqual(describedOf('/v2/payments', 'post', '201'), [
      'Cache-Control (required)',
      'X-Request-Id (required)',
      'RateLimit (required)',
      'RateLimit-Policy (required)',
      'Vary (required)',
      'Access-Control-Allow-Origin',
      'Access-Control-Expose-Headers',
      'ETag (required)',
      'Location (required)',
      'Idempotent-Replayed',
      'Content-Encoding',
    ]);
    assert.deepEqual(describedOf('/v1/products/{id}', 'get', '304'), [
      'ETag (required)',
      'Cache-Control (required)',
      'X-Request-Id (required)',
      'RateLimit (required)',
      'RateLimit-Policy (required)',
      'Vary (required)',
      'Access-Control-Allow-Origin',
      'Access-Control-Expose-Headers',
      'Deprecation (required)',
      'Sunset (required)',
      'Link (required)',
    ]);
  });
});

describe('the contract check', () => {
  const check = createContract();
  const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
    new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
  const product = { id: 1, sku: 'X', name: 'X', price: 1.5, currency: 'EUR', createdAt: '2026-01-01T00:00:00.000Z' };

  it('accepts a response the document describes', () => {
    assert.deepEqual(check.check('GET', 'http://x/v1/products/1', json(product), JSON.stringify(product)), []);
  });

  it('refuses a member the document does not name, a wrong type, a missing member', () => {
    assert.notDeepEqual(
      check.check(
        'GET',
        'http://x/v1/products/1',
        json({ ...product, extra: 1 }),
        JSON.stringify({ ...product, extra: 1 }),
      ),
      [],
    );
    assert.notDeepEqual(check.check('GET', 'http://x/v2/products/1', json(product), JSON.stringify(product)), []);
    const { sku: _, ...missing } = product;
    assert.notDeepEqual(check.check('GET', 'http://x/v1/products/1', json(missing), JSON.stringify(missing)), []);
  });

  it('refuses a status or a media type the document does not list', () => {
    assert.match(
      check.check('GET', 'http://x/v1/products/1', json(product, 418), JSON.stringify(product))[0] ?? '',
      /answered 418/,
    );
    const xml = new Response('<p/>', { headers: { 'content-type': 'text/xml' } });
    assert.match(check.check('GET', 'http://x/v1/products/1', xml, '<p/>')[0] ?? '', /answered text\/xml/);
  });

  it('has checked the responses of the HTTP tests of this file', async () => {
    const before = contract.checked;
    await t.fetch('/v1/products/1');
    await t.fetch('/v2/orders', { headers: bearer((await t.user('customer')).token) });
    assert.equal(contract.checked, before + 2);
  });
});
