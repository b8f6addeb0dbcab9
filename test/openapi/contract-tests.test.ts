/**
 * Generated contract tests (contract §16, issue 24), as a new integrator would
 * run them: Portman turns the served `/openapi.json` into a Postman collection
 * with a contract test on each operation's first success answer (its status,
 * its Content-Type, a JSON body, the body against the schema, and the presence
 * of every header the document marks `required`), and newman runs it against a
 * real server. Both come from tools/portman (its own lockfile).
 *
 * test/fixtures/contract-tests/portman-config.json says only what a generator
 * cannot guess: the values to send (a seeded product, customer and two unpaid
 * orders to pay, passed to newman as environment variables; the ids of what
 * the collection creates, kept from each POST's answer), the bearer token, and
 * an order of requests that creates a resource before reading, changing and
 * deleting it. And two things about HEAD, which Portman handles as if it were
 * GET: it asks no JSON body of a HEAD answer, which has none (RFC 9110
 * §9.3.2); and it sends HEAD accepting any media type, as curl does, where
 * Portman would take the Accept for a bodiless HEAD 200 from the first answer
 * that has a media type (a 4xx's application/problem+json), and get a 406.
 * Every other generated check is kept.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { buildOpenApi } from '../../src/openapi/document.ts';
import { routes } from '../../src/service/routes.ts';
import { bearer, startTestServer, type TestServer } from '../support/server.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CONFIG = join(ROOT, 'test', 'fixtures', 'contract-tests', 'portman-config.json');
const BIN = join(ROOT, 'tools', 'portman', 'node_modules', '.bin');
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
/** Portman's contract test on an operation targets its first answer with a status in this range. */
const SUCCESS = { from: 200, to: 302 };
/** A webhook target nothing listens on (port 9, discard): deliveries fail at once, on loopback. */
const WEBHOOK_URL = 'http://127.0.0.1:9/contract-tests';

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document, walked generically as untyped JSON
type Json = Record<string, any>;

/** newman's JSON report, as far as this test reads it. */
interface Report {
  run: {
    stats: { requests: { total: number; failed: number }; assertions: { total: number; failed: number } };
    executions: {
      item: { name: string };
      request: { method: string; url: { path: string[] } };
      response?: { code: number };
      requestError?: { message: string };
      assertions?: { assertion: string; error?: { message: string } }[];
    }[];
  };
}

/** `value`, or what its local `$ref` points at in `document`. */
function resolve(document: Json, value: Json): Json {
  if (typeof value.$ref !== 'string') return value;
  const path = (value.$ref as string).replace(/^#\//, '').split('/');
  return resolve(
    document,
    path.reduce<Json>((node, key) => node[key.replaceAll('~1', '/').replaceAll('~0', '~')], document),
  );
}

/**
 * The operations of `document` (`METHOD path`), and the checks Portman is to
 * generate for each, by kind: on the first answer with a status from 200 to
 * 302, its status; a 204's empty body; the Content-Type of its first media
 * type and, when that is JSON and the method not HEAD, a JSON body and (with
 * a schema) the schema; and each header it marks required.
 */
function expectedChecks(document: Json): { operations: string[]; checks: Record<string, number> } {
  const operations: string[] = [];
  const checks: Record<string, number> = {};
  const add = (kind: string, n = 1) => {
    if (n > 0) checks[kind] = (checks[kind] ?? 0) + n;
  };
  for (const [path, item] of Object.entries(document.paths as Json))
    for (const method of METHODS) {
      const operation = (item as Json)[method] as Json | undefined;
      if (operation === undefined) continue;
      operations.push(`${method.toUpperCase()} ${path}`);
      const target = Object.entries(operation.responses as Json).find(([status]) => {
        const code = Number.parseInt(status, 10);
        return code >= SUCCESS.from && code <= SUCCESS.to;
      });
      if (target === undefined) continue;
      const answer = resolve(document, target[1]);
      add('status');
      if (target[0] === '204') add('empty body');
      const [mediaType, media] = Object.entries((answer.content ?? {}) as Json)[0] ?? [];
      if (mediaType !== undefined) add('content-type');
      // A HEAD answer has no body (RFC 9110 §9.3.2): the configuration asks no body checks of HEAD.
      const json = method !== 'head' && mediaType?.includes('json') === true;
      if (json) add('JSON body');
      if (json && media?.schema !== undefined) add('schema');
      const headers = Object.values((answer.headers ?? {}) as Json);
      add('header', headers.filter((header) => resolve(document, header).required === true).length);
    }
  return { operations, checks };
}

/** What kind of generated check an assertion is, from the name Portman gives it. */
function kind(assertion: string): string {
  const rules: [RegExp, string][] = [
    [/ - Status code is 2xx$/, 'status'],
    [/ - Content-Type is /, 'content-type'],
    [/ - Response has JSON Body$/, 'JSON body'],
    [/ - Response has empty Body$/, 'empty body'],
    [/ - Schema is valid$/, 'schema'],
    [/ - Response header .+ is present$/, 'header'],
  ];
  return rules.find(([pattern]) => pattern.test(assertion))?.[1] ?? 'other';
}

describe('contract tests generated from /openapi.json (Portman, newman)', () => {
  let starting: Promise<TestServer> | undefined;
  let t: TestServer;
  const folder = mkdtempSync(join(tmpdir(), 'orders-contract-tests-'));
  let document: Json;
  let report: Report;
  before(async () => {
    for (const tool of ['portman', 'newman'])
      assert.ok(existsSync(join(BIN, tool)), `${tool} is missing: npm ci --prefix tools/portman (make test does)`);
    // The document the server will serve, built as it builds it, so that Portman works while the server starts.
    const text = JSON.stringify(buildOpenApi(routes));
    document = JSON.parse(text) as Json;
    writeFileSync(join(folder, 'openapi.json'), text);
    // Portman reads a .env in its working folder: the temporary folder has none.
    const portman = ['-l', 'openapi.json', '-c', CONFIG, '-o', 'collection.json', '--no-warn'];
    // Rate limiting as it is by default (the test servers' default is off): its headers are then always sent.
    starting = startTestServer({ RATE_LIMIT: '600/60', WEBHOOK_ALLOW_PRIVATE: '1' });
    [t] = await Promise.all([starting, run(join(BIN, 'portman'), portman, { cwd: folder })]);
    const served = await t.fetch('/openapi.json');
    assert.equal(served.status, 200);
    assert.ok((await served.text()) === text, 'the served /openapi.json is not buildOpenApi(routes)');
    const [admin, customer] = await Promise.all([t.user('admin'), t.user('customer')]);

    // The seed: a product of the catalog, and two unpaid orders of the customer, one per version's payment. The
    // GET through t.fetch also waits, in a run with a replica, until the standby has the users and tokens.
    const products = (await (await t.fetch('/v2/products?pageSize=1')).json()) as Json;
    const product = products.data[0] as Json;
    const order = async () => {
      const response = await t.fetch('/v2/orders', {
        method: 'POST',
        headers: { ...bearer(admin.token), 'content-type': 'application/json' },
        body: JSON.stringify({ customerId: customer.id, items: [{ productId: product.id, qty: 1 }] }),
      });
      assert.equal(response.status, 201);
      return ((await response.json()) as Json).id as number;
    };
    const values = {
      baseUrl: t.url,
      bearerToken: admin.token,
      productId: product.id,
      customerId: customer.id,
      payOrderV1: await order(),
      payOrderV2: await order(),
      payAmount: product.price.amount,
      payCurrency: product.price.currency,
      webhookUrl: WEBHOOK_URL,
    };

    const newman = ['run', 'collection.json', '--reporters', 'json', '--reporter-json-export', 'report.json'];
    for (const [name, value] of Object.entries(values)) newman.push('--env-var', `${name}=${value}`);
    // newman exits 1 when a check fails: the report says which, and the tests below read it.
    await run(join(BIN, 'newman'), newman, { cwd: folder, maxBuffer: 64 << 20 }).catch((error: { code?: unknown }) => {
      if (error.code !== 1) throw error;
    });
    report = JSON.parse(readFileSync(join(folder, 'report.json'), 'utf8')) as Report;
  });
  after(async () => {
    await (await starting?.catch(() => undefined))?.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it('sends one request per operation of the document, and each is answered', (c) => {
    const { requests, assertions } = report.run.stats;
    c.diagnostic(`${requests.total} requests, ${assertions.total} assertions, ${assertions.failed} failed`);
    assert.equal(requests.total, expectedChecks(document).operations.length);
    assert.deepEqual(
      report.run.executions.filter((e) => e.requestError !== undefined).map((e) => e.requestError?.message),
      [],
    );
  });

  it('generates every check the document calls for, by kind', (c) => {
    const counts: Record<string, number> = {};
    for (const a of report.run.executions.flatMap((e) => e.assertions ?? []))
      counts[kind(a.assertion)] = (counts[kind(a.assertion)] ?? 0) + 1;
    c.diagnostic(JSON.stringify(counts));
    assert.deepEqual(counts, expectedChecks(document).checks);
  });

  it('checks headers: the document marks those always sent required', () => {
    const headerChecks = expectedChecks(document).checks.header ?? 0;
    assert.ok(headerChecks > 0, 'no response header is marked required: Portman generates no header check');
  });

  it('passes every generated check', (c) => {
    const failures = report.run.executions.flatMap((e) =>
      (e.assertions ?? [])
        .filter((a) => a.error !== undefined)
        .map((a) => {
          const where = `${e.request.method} /${e.request.url.path.join('/')} → ${e.response?.code ?? 'no answer'}`;
          return `${where}: ${a.assertion.replace(/^\[\w+\]::\S+ - /, '')}: ${a.error?.message.split('\n')[0]}`;
        }),
    );
    c.diagnostic(`${failures.length} failures`);
    assert.deepEqual(failures, [], `${failures.length} generated checks failed:\n${failures.join('\n')}`);
    assert.equal(report.run.stats.assertions.failed, 0);
  });
});
