/**
 * The command-line tool (SPEC §1) against the database of this run: the
 * real server's test database, or an embedded one in a temporary DATA_DIR
 * (an in-memory one would not outlive a command).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli, USAGE } from '../src/cli.ts';
import { readMigrations } from '../src/db/migrate.ts';
import { createTestDatabase, type TestDatabase } from './support/database.ts';

let database: TestDatabase;
let env: Record<string, string>;
let dataDir: string | undefined;

before(async () => {
  database = await createTestDatabase();
  if (database.real) {
    env = { DATABASE_URL: database.url };
  } else {
    dataDir = mkdtempSync(join(tmpdir(), 'orders-cli-'));
    env = { DATA_DIR: dataDir };
  }
});

after(async () => {
  await database.drop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function cli(...argv: string[]): Promise<{ status: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const status = await runCli(argv, env, { out: (t) => (out += t), err: (t) => (err += t) });
  return { status, out, err };
}

describe('orders migrate', () => {
  it('prints the migrations it applied, then nothing', async () => {
    assert.deepEqual(await cli('migrate'), { status: 0, out: readMigrations().map((m) => `${m.name}\n`).join(''), err: '' });
    assert.deepEqual(await cli('migrate'), { status: 0, out: '', err: '' });
  });
});

describe('orders seed', () => {
  it('loads the demo users and catalog, and is idempotent', async () => {
    const first = await cli('seed');
    assert.equal(first.status, 0);
    const printed = JSON.parse(first.out);
    assert.deepEqual(printed.users.map((u: { email: string; role: string }) => [u.email, u.role]), [['admin@example.com', 'admin'], ['customer@example.com', 'customer']]);
    assert.equal(printed.products, 21);
    const second = await cli('seed');
    assert.deepEqual(JSON.parse(second.out), printed);
  });
});

describe('orders user create', () => {
  it('prints the new user as JSON', async () => {
    const { status, out, err } = await cli('user', 'create', '--email', 'Ops@Example.com', '--name', 'Ops', '--role', 'admin');
    assert.equal(err, '');
    assert.equal(status, 0);
    const user = JSON.parse(out);
    assert.deepEqual({ ...user, id: 0, createdAt: '' }, { id: 0, email: 'Ops@Example.com', name: 'Ops', role: 'admin', createdAt: '' });
    assert.ok(Number.isInteger(user.id));
  });

  it('defaults the role to customer', async () => {
    assert.equal(JSON.parse((await cli('user', 'create', '--email', 'c@example.com', '--name', 'C')).out).role, 'customer');
  });

  it('refuses an e-mail address taken in another case', async () => {
    assert.deepEqual(await cli('user', 'create', '--email', 'ops@example.com', '--name', 'Again'), {
      status: 1, out: '', err: 'orders: a user with the e-mail address ops@example.com exists already\n',
    });
  });

  it('refuses bad options with the usage and status 2', async () => {
    for (const argv of [
      ['user', 'create', '--email', 'not-an-address', '--name', 'X'],
      ['user', 'create', '--email', 'x@example.com'],
      ['user', 'create', '--email', 'x@example.com', '--name', 'X', '--role', 'root'],
      ['user', 'create', '--email', 'x@example.com', '--name', 'X', '--colour', 'red'],
    ]) {
      const result = await cli(...argv);
      assert.equal(result.status, 2, argv.join(' '));
      assert.equal(result.out, '');
      assert.ok(result.err.startsWith('orders: '), result.err);
      assert.ok(result.err.includes(USAGE));
    }
  });
});

describe('orders token', () => {
  let userId: number;
  let tokenId: number;

  it('create prints the token alone on one line', async () => {
    userId = JSON.parse((await cli('user', 'create', '--email', 'tok@example.com', '--name', 'Tok')).out).id;
    const { status, out, err } = await cli('token', 'create', '--user', String(userId), '--scopes', 'orders:read,orders:write', '--ttl', '30d');
    assert.equal(err, '');
    assert.equal(status, 0);
    assert.match(out, /^ord_[A-Za-z0-9_-]{43}\n$/);
  });

  it('list shows the tokens without their secrets', async () => {
    const { status, out } = await cli('token', 'list', '--user', String(userId));
    assert.equal(status, 0);
    const tokens = JSON.parse(out);
    assert.equal(tokens.length, 1);
    assert.deepEqual(Object.keys(tokens[0]), ['id', 'userId', 'scopes', 'createdAt', 'expiresAt', 'revokedAt']);
    assert.deepEqual(tokens[0].scopes, ['orders:read', 'orders:write']);
    assert.equal(tokens[0].revokedAt, null);
    const days = (Date.parse(tokens[0].expiresAt) - Date.parse(tokens[0].createdAt)) / 86_400_000;
    assert.equal(days, 30);
    assert.ok(!out.includes('ord_'));
    tokenId = tokens[0].id;
  });

  it('revoke prints nothing and marks the token revoked', async () => {
    assert.deepEqual(await cli('token', 'revoke', '--id', String(tokenId)), { status: 0, out: '', err: '' });
    const tokens = JSON.parse((await cli('token', 'list', '--user', String(userId))).out);
    assert.match(tokens[0].revokedAt, /^\d{4}-/);
  });

  it('refuses an unknown token, user or scope', async () => {
    assert.deepEqual(await cli('token', 'revoke', '--id', '999999'), { status: 1, out: '', err: 'orders: there is no token 999999\n' });
    assert.deepEqual(await cli('token', 'create', '--user', '999999', '--scopes', 'orders:read'), { status: 1, out: '', err: 'orders: there is no user 999999\n' });
    assert.deepEqual(await cli('token', 'list', '--user', '999999'), { status: 1, out: '', err: 'orders: there is no user 999999\n' });
    const scope = await cli('token', 'create', '--user', String(userId), '--scopes', 'orders:read,root');
    assert.equal(scope.status, 2);
    assert.ok(scope.err.startsWith('orders: unknown scopes root\n'));
  });

  it('refuses malformed ids and time-to-live values', async () => {
    for (const argv of [
      ['token', 'create', '--user', 'abc', '--scopes', 'orders:read'],
      ['token', 'create', '--user', String(userId), '--scopes', 'orders:read', '--ttl', 'forever'],
      ['token', 'create', '--user', String(userId), '--scopes', ','],
      ['token', 'revoke', '--id', '-1'],
      ['token', 'list'],
      ['token', 'burn'],
      ['nothing'],
      [],
    ]) {
      const result = await cli(...argv);
      assert.equal(result.status, 2, argv.join(' '));
      assert.ok(result.err.includes('usage: orders <command>'), argv.join(' '));
    }
  });
});

describe('configuration errors', () => {
  it('stop the tool with one line naming the variable', async () => {
    const status = await runCli(['migrate'], { PORT: 'x' }, { out: () => {}, err: (t) => assert.equal(t, 'orders: PORT must be an integer from 0 to 65535, got "x"\n') });
    assert.equal(status, 1);
  });
});
