/**
 * A typed client generated from the served `/openapi.json` by a mainstream
 * generator (contract §16, issue 24), as a new integrator would make one:
 * openapi-typescript writes the types (from tools/openapi-typescript, with the
 * TypeScript 5 whose compiler API it builds them with: TypeScript 7 has none),
 * openapi-fetch sends the requests, and the project's own TypeScript 7 checks
 * the generated types with the two files of test/fixtures/generated-client:
 * `walk.ts`, an integrator's first script, and `checks.ts`, the rules every
 * answer's type must meet (a media type on every answer with a body, no
 * `unknown` in a JSON body, `X-Request-Id` typed). Then the walk runs against
 * a real server: list → create → read → 304 → pay → replay.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { tsImport } from 'tsx/esm/api';
import { buildOpenApi } from '../../src/openapi/document.ts';
import { routes } from '../../src/service/routes.ts';
import { typeCheck } from '../support/typescript.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURES = join(ROOT, 'test', 'fixtures', 'generated-client');
const GENERATOR = join(ROOT, 'tools', 'openapi-typescript', 'node_modules', '.bin', 'openapi-typescript');

/** The project's strictness, the DOM's fetch types (openapi-fetch's), every type spelt out in full in messages. */
const TSCONFIG = {
  compilerOptions: {
    target: 'es2022',
    module: 'nodenext',
    moduleResolution: 'nodenext',
    lib: ['es2023', 'dom'],
    types: [],
    strict: true,
    noUncheckedIndexedAccess: true,
    exactOptionalPropertyTypes: true,
    allowImportingTsExtensions: true,
    noEmit: true,
    skipLibCheck: true,
    noErrorTruncation: true,
    pretty: false,
  },
};

/**
 * A new folder with the types openapi-typescript generates from `document`
 * (`schema.ts`), the fixtures `files` beside them, and the project's
 * node_modules (openapi-fetch) reachable: what `tsc -p` and an import need.
 */
async function generate(folder: string, document: string, files: readonly string[]): Promise<void> {
  writeFileSync(join(folder, 'openapi.json'), document);
  writeFileSync(join(folder, 'package.json'), '{ "type": "module" }\n');
  writeFileSync(join(folder, 'tsconfig.json'), JSON.stringify({ ...TSCONFIG, files }, null, 2));
  for (const file of files) copyFileSync(join(FIXTURES, file), join(folder, file));
  symlinkSync(join(ROOT, 'node_modules'), join(folder, 'node_modules'), 'dir');
  await run(GENERATOR, ['openapi.json', '--output', 'schema.ts'], { cwd: folder });
}

const RULES = ['untypedBodies', 'untypedRequestIds'] as const;

/** Where checks.ts declares `rule`: the prefix of tsc's message there. */
function at(rule: (typeof RULES)[number]): string {
  const lines = readFileSync(join(FIXTURES, 'checks.ts'), 'utf8').split('\n');
  const line = lines.findIndex((text) => text.startsWith(`export const ${rule}:`)) + 1;
  assert.ok(line > 0, `checks.ts declares no ${rule}`);
  return `checks.ts(${line},`;
}

/**
 * The answers a rule of checks.ts names: the string literals of tsc's message
 * at its declaration, sorted; none when that declaration type-checks (its
 * type is then `'none'`).
 */
function named(messages: readonly string[], rule: (typeof RULES)[number]): string[] {
  const message = messages.find((m) => m.startsWith(at(rule)));
  if (message === undefined) return [];
  const target = message.slice(message.indexOf('to type'));
  return [...target.matchAll(/"([^"]*)"/g)].map((m) => m[1] as string).sort();
}

/** The messages that are not a rule of checks.ts naming answers: errors of the walk, or of the checks themselves. */
function others(messages: readonly string[]): string[] {
  return messages.filter((m) => !RULES.some((rule) => m.startsWith(at(rule))));
}

/** What walk.ts returns, as far as this test reads it (its own types are the generated ones). */
type Money = { amount: string; currency: string };
type Payment = { id: number; orderId: number; amount: Money; status: string };
type Walk = (
  baseUrl: string,
  token: string,
  idempotencyKey: string,
) => Promise<{
  list: { status: number; productId: number; price: Money };
  create: {
    status: number;
    location: string | null;
    order: {
      id: number;
      customerId: number;
      status: string;
      total: Money;
      items: { productId: number; qty: number }[];
    };
  };
  read: { status: number; etag: string | null; sameOrder: boolean };
  notModified: { status: number; etag: string | null };
  pay: { status: number; payment: Payment; replayed: string | null };
  replay: { status: number; payment: Payment; replayed: string | null };
  paid: { status: number; orderStatus: string };
}>;

describe('a client generated from /openapi.json (openapi-typescript, openapi-fetch)', () => {
  let starting: Promise<TestServer> | undefined;
  let t: TestServer;
  const served = mkdtempSync(join(tmpdir(), 'orders-generated-client-'));
  const shortfalls = mkdtempSync(join(tmpdir(), 'orders-generated-client-'));
  let messages: string[];
  let shortfallMessages: string[];
  before(async () => {
    assert.ok(
      existsSync(GENERATOR),
      `${GENERATOR} is missing: npm ci --prefix tools/openapi-typescript (make test does)`,
    );
    // The document the server will serve, built as it builds it, so that generation runs while the server starts.
    const document = JSON.stringify(buildOpenApi(routes));
    const checked = async (folder: string, text: string, files: readonly string[]): Promise<string[]> => {
      await generate(folder, text, files);
      return typeCheck(folder);
    };
    starting = startTestServer();
    [t, messages, shortfallMessages] = await Promise.all([
      starting,
      checked(served, document, ['walk.ts', 'checks.ts']),
      checked(shortfalls, readFileSync(join(FIXTURES, 'shortfalls.openapi.json'), 'utf8'), ['checks.ts']),
    ]);
    const response = await t.fetch('/openapi.json');
    assert.equal(response.status, 200);
    assert.ok((await response.text()) === document, 'the served /openapi.json is not buildOpenApi(routes)');
  });
  after(async () => {
    await (await starting?.catch(() => undefined))?.close();
    for (const folder of [served, shortfalls]) rmSync(folder, { recursive: true, force: true });
  });

  it('generates types the project’s TypeScript accepts, and the walk type-checks against them', () => {
    assert.match(readFileSync(join(served, 'schema.ts'), 'utf8'), /^export interface paths \{$/m);
    assert.deepEqual(others(messages), []);
  });

  it('gives every answer with a body a media type, and no JSON body an unknown part', (c) => {
    const untyped = named(messages, 'untypedBodies');
    c.diagnostic(`${untyped.length} untyped answers`);
    assert.deepEqual(untyped, []);
  });

  it('types X-Request-Id as a string always present, on every answer', () => {
    assert.deepEqual(named(messages, 'untypedRequestIds'), []);
  });

  it('would report each shortfall of a document that has them, and nothing else', () => {
    assert.deepEqual(named(shortfallMessages, 'untypedBodies'), [
      'GET /list 200 application/json: body[].tags[]',
      'GET /page 200: no media type',
      'GET /things/{id} 200 application/json: body.data',
    ]);
    assert.deepEqual(named(shortfallMessages, 'untypedRequestIds'), [
      'GET /list 200: X-Request-Id',
      'GET /things/{id} 404: X-Request-Id',
    ]);
    assert.deepEqual(others(shortfallMessages), []);
  });

  it('walks list → create → read → 304 → pay → replay on the service, as the contract says', async () => {
    const customer = await t.user('customer');
    // In a run with a replica, a GET through t.fetch waits until the standby has the new user and token.
    assert.equal((await t.fetch('/healthz')).status, 200);
    // tsx compiles it, also under `make test`, where this file runs compiled (scripts/bundle-tests.mjs).
    const { walk } = (await tsImport(pathToFileURL(join(served, 'walk.ts')).href, import.meta.url)) as { walk: Walk };
    const w = await walk(t.url, customer.token, 'generated-client-walk');
    assert.equal(w.list.status, 200);
    assert.equal(w.create.status, 201);
    const order = w.create.order;
    assert.equal(w.create.location, `/v2/orders/${order.id}`);
    assert.equal(order.status, 'pending');
    assert.equal(order.customerId, customer.id);
    assert.deepEqual(
      order.items.map((item) => [item.productId, item.qty]),
      [[w.list.productId, 2]],
    );
    const cents = Math.round(Number(w.list.price.amount) * 100) * 2;
    assert.deepEqual(order.total, { amount: (cents / 100).toFixed(2), currency: w.list.price.currency });
    assert.deepEqual(w.read, { status: 200, etag: w.read.etag, sameOrder: true });
    assert.match(w.read.etag ?? '', /^"[^"]+"$/);
    assert.deepEqual(w.notModified, { status: 304, etag: w.read.etag });
    assert.equal(w.pay.status, 201);
    assert.equal(w.pay.replayed, null);
    assert.equal(w.pay.payment.orderId, order.id);
    assert.equal(w.pay.payment.status, 'succeeded');
    assert.deepEqual(w.pay.payment.amount, order.total);
    assert.deepEqual(w.replay, { status: 201, payment: w.pay.payment, replayed: 'true' });
    assert.deepEqual(w.paid, { status: 200, orderStatus: 'paid' });
  });
});
