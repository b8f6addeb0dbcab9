/**
 * The built program (`make build`, scripts/build.mjs): one JavaScript file
 * that runs without tsx or TypeScript, with `sql/` one folder up and the
 * embedded database's packages in `node_modules/` beside it. Built into a
 * temporary folder laid out like the checkout, then run as an operator runs
 * it: through its #! line.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { startService, type ServiceProcess } from '../support/process.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const run = promisify(execFile);

describe('the built program', () => {
  let folder: string;
  let program: string;
  let database: TestDatabase;
  let service: ServiceProcess | undefined;

  before(async () => {
    folder = mkdtempSync(join(tmpdir(), 'orders-build-'));
    mkdirSync(join(folder, 'dist'));
    symlinkSync(join(ROOT, 'sql'), join(folder, 'sql'));
    symlinkSync(join(ROOT, 'node_modules'), join(folder, 'node_modules'));
    program = join(folder, 'dist', 'orders.mjs');
    await run(process.execPath, ['scripts/build.mjs', program], { cwd: ROOT });
    database = await createTestDatabase();
  });

  after(async () => {
    if (service !== undefined && service.process.exitCode === null) service.process.kill('SIGKILL');
    await database.drop();
    rmSync(folder, { recursive: true, force: true });
  });

  it('is one executable JavaScript file with its flags on the #! line, and no TypeScript loader in it', () => {
    const text = readFileSync(program, 'utf8');
    assert.equal(
      text.split('\n', 1)[0],
      '#!/usr/bin/env -S node --max-semi-space-size=10 --heap-growing-percent=50 --no-maglev',
    );
    assert.equal(statSync(program).mode & 0o111, 0o111);
    assert.doesNotMatch(text, /from ['"]tsx/);
    assert.doesNotMatch(text, /\.ts['"]\)/);
  });

  it('runs the command-line tool when given a command', async () => {
    const env = { ...process.env, DATABASE_URL: database.url, DATABASE_READ_URL: '' };
    const migrated = await run(process.execPath, [program, 'migrate'], { cwd: folder, env });
    assert.match(migrated.stdout, /0001_init\.sql/);
    // The demo catalog, for the server below (an embedded memory: database is the server's own, seeded at creation).
    await run(process.execPath, [program, 'seed'], { cwd: folder, env });
  });

  it('with no argument serves the API as make run does, and stops on SIGTERM with exit 0', async () => {
    // Run through its #! line, with node's folder on PATH, as an operator would.
    service = await startService({ DATABASE_URL: database.url, LOG_LEVEL: 'info' }, undefined, undefined, [program]);
    const products = await fetch(`${service.url}/v1/products`);
    assert.equal(products.status, 200);
    assert.equal(((await products.json()) as { meta: { total: number } }).meta.total, 21);
    assert.equal((await fetch(`${service.url}/readyz`)).status, 200);
    const [code] = await Promise.all([
      once(service.process, 'exit').then(([c]) => c),
      Promise.resolve(service.process.kill('SIGTERM')),
    ]);
    assert.equal(code, 0);
    assert.match(service.stdout(), /"message":"request".*"path":"\/v1\/products".*"status":200/);
  });
});
