/**
 * The single executable (`make build` → dist/orders; contract §16) as an operator
 * installs it: the one file copied into an empty folder of its own and run
 * there with a PATH that holds no `node` and an environment holding nothing
 * else. On the embedded database (its default, ./data in that folder, with
 * the demo tokens printed on first creation) or on the real PostgreSQL
 * server of this run. The README walkthrough runs against it, its
 * command-line tool makes a token the server then accepts, and SIGTERM stops
 * it with exit 0.
 */
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, databaseEnv, type TestDatabase } from '../support/database.ts';
import { runWalkthrough } from '../support/walkthrough.ts';

const EXECUTABLE = process.env.ORDERS_EXECUTABLE ?? new URL('../../dist/orders', import.meta.url).pathname;
const ALL_SCOPES =
  'orders:read,orders:write,payments:read,payments:write,users:read,users:write,events:read,webhooks:write';

interface Running {
  readonly child: ChildProcessWithoutNullStreams;
  readonly url: string;
  stderr(): string;
}

describe('the single executable', {
  skip: existsSync(EXECUTABLE) ? false : `${EXECUTABLE} is missing: make build makes it (make test runs make build)`,
}, () => {
  let folder: string;
  let emptyBin: string;
  let program: string;
  let database: TestDatabase;
  let running: Running | undefined;
  /** The environment of every run: nothing inherited, no node on PATH. */
  let env: Record<string, string>;

  before(async () => {
    folder = mkdtempSync(join(tmpdir(), 'orders-exe-'));
    emptyBin = mkdtempSync(join(tmpdir(), 'orders-exe-bin-'));
    program = join(folder, 'orders');
    copyFileSync(EXECUTABLE, program);
    chmodSync(program, 0o755);
    database = await createTestDatabase();
    env = {
      PATH: emptyBin,
      HOME: folder,
      PORT: '0',
      LOG_LEVEL: 'warn',
      ...(database.real ? databaseEnv(database.url) : {}),
    };
  });

  after(async () => {
    if (running !== undefined && running.child.exitCode === null) running.child.kill('SIGKILL');
    await database.drop();
    rmSync(folder, { recursive: true, force: true });
    rmSync(emptyBin, { recursive: true, force: true });
  });

  /** Runs the tool: `orders <args>` in the folder; resolves with its exit status and output. */
  const tool = (...args: string[]) =>
    new Promise<{ status: number; out: string; err: string }>((resolve) => {
      execFile(program, args, { cwd: folder, env }, (error, out, err) =>
        resolve({ status: error === null ? 0 : Number(error.code), out, err }),
      );
    });

  /** Starts the server (no argument) with `more` variables and waits for its "listening on" line. */
  async function start(more: Record<string, string> = {}): Promise<Running> {
    const child = spawn(program, [], { cwd: folder, env: { ...env, ...more } });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.resume();
    const url = await new Promise<string>((resolve, reject) => {
      child.stderr.on('data', () => {
        const match = /listening on (http:\/\/\S+)/.exec(stderr);
        if (match) resolve(match[1] as string);
      });
      child.once('exit', (code) => reject(new Error(`exited with ${code} before listening: ${stderr}`)));
    });
    running = { child, url, stderr: () => stderr };
    return running;
  }

  async function stop(server: Running): Promise<number | null> {
    const exited = once(server.child, 'exit');
    server.child.kill('SIGTERM');
    const [code] = await exited;
    return code as number | null;
  }

  it('is the only file in its folder, and no node is on the PATH it runs with', () => {
    assert.deepEqual(readdirSync(folder), ['orders']);
    assert.deepEqual(readdirSync(emptyBin), []);
  });

  it('prints its version and its usage, as the command-line tool does', async () => {
    const version = await tool('--version');
    assert.deepEqual(version, {
      status: 0,
      out: `${JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version}\n`,
      err: '',
    });
    const help = await tool('--help');
    assert.equal(help.status, 0);
    assert.match(help.out, /^usage: orders {22}the server: serves the API on HOST:PORT/);
    const typo = await tool('tokne', 'create');
    assert.equal(typo.status, 2);
    assert.match(typo.err, /^orders: unknown command "tokne create"; did you mean "token create"\?\n/);
  });

  it('serves the README walkthrough, with the demo tokens of first creation or tokens its tool made', async () => {
    const vars: Record<string, string> = {};
    if (!database.real) {
      const server = await start();
      // contract §1: the embedded default in ./data, created now, tokens printed once.
      assert.ok(existsSync(join(folder, 'data', 'PG_VERSION')));
      const admin = /admin: +(ord_[A-Za-z0-9_-]{54})\n/.exec(server.stderr());
      const customer = /customer: +(ord_[A-Za-z0-9_-]{54})\n/.exec(server.stderr());
      assert.ok(admin && customer, server.stderr());
      vars.ADMIN = admin[1] as string;
      vars.CUSTOMER = customer[1] as string;
    } else {
      // Nothing is seeded on a real server: the catalog and two accounts from the tool.
      assert.equal((await tool('seed')).status, 0);
      for (const [name, role, scopes] of [
        ['ADMIN', 'admin', ALL_SCOPES],
        ['CUSTOMER', 'customer', 'orders:read,orders:write,payments:read,payments:write'],
      ] as const) {
        const user = await tool('user', 'create', '--email', `${role}-exe@example.com`, '--name', role, '--role', role);
        assert.equal(user.status, 0, user.err);
        const token = await tool(
          'token',
          'create',
          '--user',
          String((JSON.parse(user.out) as { id: number }).id),
          '--scopes',
          scopes,
        );
        assert.equal(token.status, 0, token.err);
        vars[name] = token.out.trim();
      }
      await start();
    }
    const server = running as Running;
    vars.API = server.url;
    assert.equal((await fetch(`${server.url}/v1/products`)).status, 200);
    await runWalkthrough(server.url, vars);
    assert.equal(await stop(server), 0);
  });

  it('makes a token with its tool that the server accepts after a restart; stops on SIGTERM with exit 0', async () => {
    const users = await tool('token', 'create', '--user', '1', '--scopes', 'users:read');
    assert.equal(users.status, 0, users.err);
    const token = users.out.trim();
    assert.match(token, /^ord_[A-Za-z0-9_-]{54}$/);
    const server = await start();
    const response = await fetch(`${server.url}/v1/users/1`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(response.status, 200);
    assert.equal(((await response.json()) as { id: number }).id, 1);
    assert.equal(await stop(server), 0);
  });

  it('runs WORKERS=2 processes of itself on a PostgreSQL server', async (t) => {
    if (!database.real) {
      t.skip('the embedded database serves one process');
      return;
    }
    const server = await start({ WORKERS: '2', LOG_LEVEL: 'info' });
    assert.match(server.stderr(), /listening on http:\/\/\S+ \(database: postgres, 2 workers\)/);
    assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
    assert.equal(await stop(server), 0);
  });
});
