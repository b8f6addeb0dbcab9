/**
 * `WORKERS=2` (issue 7): two HTTP processes on one port, each on its own
 * pool; SIGTERM stops both and the primary exits 0. Real PostgreSQL only.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, REAL_SERVER_URL, type TestDatabase } from './support/database.ts';

const ROOT = new URL('..', import.meta.url).pathname;

describe('WORKERS=2', { skip: REAL_SERVER_URL ? false : 'needs a real PostgreSQL server' }, () => {
  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase();
  });
  after(async () => {
    await database.drop();
  });

  it('serves from two processes on one port and stops both on SIGTERM', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: ROOT, env: { ...process.env, DATABASE_URL: database.url, PORT: '0', WORKERS: '2', LOG_LEVEL: 'info' },
    });
    let stderr = '';
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    const url = await new Promise<string>((resolve, reject) => {
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
        const match = /listening on (http:\/\/\S+) \(database: postgres, 2 workers\)/.exec(stderr);
        if (match) resolve(match[1] as string);
      });
      child.once('exit', (code) => reject(new Error(`exited with ${code}: ${stderr}`)));
    });
    for (let i = 0; i < 20; i++) assert.equal((await fetch(`${url}/readyz`)).status, 200);
    const workers = new Set([...stdout.matchAll(/"message":"listening","url":"[^"]+","database":"postgres","startupMs":\d+,"worker":(\d+)/g)].map((m) => m[1]));
    assert.equal(workers.size, 2);
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    assert.equal(code, 0);
  });

  it('stops with exit 1, without restarting, when the workers cannot start', async () => {
    const url = new URL(database.url);
    url.pathname = '/orders_no_such_database';
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: ROOT, env: { ...process.env, DATABASE_URL: url.toString(), PORT: '0', WORKERS: '2' } });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.resume();
    const [code] = await once(child, 'exit');
    assert.equal(code, 1);
    assert.match(stderr, /orders: cannot start: database "orders_no_such_database" does not exist/);
  });
});
