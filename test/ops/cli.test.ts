/**
 * The command-line tool (contract §1) against the database of this run: the
 * real server's test database, or an embedded one in a temporary DATA_DIR
 * (an in-memory one would not outlive a command).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { runCli } from '../../src/cli.ts';
import { USAGE } from '../../src/cli/help.ts';
import { readMigrations } from '../../src/db/migrate.ts';
import { createTestDatabase, databaseEnv, type TestDatabase } from '../support/database.ts';

let database: TestDatabase;
let env: Record<string, string>;
let dataDir: string | undefined;

before(async () => {
  database = await createTestDatabase();
  if (database.real) {
    env = databaseEnv(database.url);
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
    assert.deepEqual(await cli('migrate'), {
      status: 0,
      out: readMigrations()
        .map((m) => `${m.name}\n`)
        .join(''),
      err: '',
    });
    assert.deepEqual(await cli('migrate'), { status: 0, out: '', err: '' });
  });
});

describe('orders seed', () => {
  it('loads the demo users and catalog, and is idempotent', async () => {
    const first = await cli('seed');
    assert.equal(first.status, 0);
    const printed = JSON.parse(first.out);
    assert.deepEqual(
      printed.users.map((u: { email: string; role: string }) => [u.email, u.role]),
      [
        ['admin@example.com', 'admin'],
        ['customer@example.com', 'customer'],
      ],
    );
    assert.equal(printed.products, 21);
    const second = await cli('seed');
    assert.deepEqual(JSON.parse(second.out), printed);
  });
});

describe('orders user create', () => {
  it('prints the new user as JSON', async () => {
    const { status, out, err } = await cli(
      'user',
      'create',
      '--email',
      'Ops@Example.com',
      '--name',
      'Ops',
      '--role',
      'admin',
    );
    assert.equal(err, '');
    assert.equal(status, 0);
    const user = JSON.parse(out);
    assert.deepEqual(
      { ...user, id: 0, createdAt: '' },
      { id: 0, email: 'Ops@Example.com', name: 'Ops', role: 'admin', createdAt: '' },
    );
    assert.ok(Number.isInteger(user.id));
  });

  it('defaults the role to customer', async () => {
    assert.equal(
      JSON.parse((await cli('user', 'create', '--email', 'c@example.com', '--name', 'C')).out).role,
      'customer',
    );
  });

  it('refuses an e-mail address taken in another case', async () => {
    assert.deepEqual(await cli('user', 'create', '--email', 'ops@example.com', '--name', 'Again'), {
      status: 1,
      out: '',
      err: 'orders: a user with the e-mail address ops@example.com exists already\n',
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
    const { status, out, err } = await cli(
      'token',
      'create',
      '--user',
      String(userId),
      '--scopes',
      'orders:read,orders:write',
      '--ttl',
      '30d',
    );
    assert.equal(err, '');
    assert.equal(status, 0);
    assert.match(out, /^ord_[A-Za-z0-9_-]{54}\n$/);
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
    assert.deepEqual(await cli('token', 'revoke', '--id', '999999'), {
      status: 1,
      out: '',
      err: 'orders: there is no token 999999\n',
    });
    assert.deepEqual(await cli('token', 'create', '--user', '999999', '--scopes', 'orders:read'), {
      status: 1,
      out: '',
      err: 'orders: there is no user 999999\n',
    });
    assert.deepEqual(await cli('token', 'list', '--user', '999999'), {
      status: 1,
      out: '',
      err: 'orders: there is no user 999999\n',
    });
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
      assert.ok(result.err.includes('usage: orders                      the server'), argv.join(' '));
    }
  });
});

describe('configuration errors', () => {
  it('stop the tool with one line naming the variable', async () => {
    const status = await runCli(
      ['migrate'],
      { PORT: 'x' },
      { out: () => {}, err: (t) => assert.equal(t, 'orders: PORT must be an integer from 0 to 65535, got "x"\n') },
    );
    assert.equal(status, 1);
  });
});

const VERSION = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version as string;

const TOKEN_CREATE_HELP = `usage: orders token create --user ID --scopes a,b,c [--ttl 30d]

Print a new token, alone on one line (shown once).

Options:
  --user ID        required   the id of the user the token acts for
  --scopes a,b,c   required   what the token may do, comma-separated (see Scopes in orders --help)
  --ttl 30d        optional   how long it is valid: a number and a unit (s, m, h, d); without it, it does not expire

Example:
  orders token create --user 3 --scopes orders:read,orders:write --ttl 30d
`;

const TOKEN_HELP = `usage: orders token <command> [options]

Commands:
  token create --user ID --scopes a,b,c [--ttl 30d]   print a new token, alone on one line (shown once)
  token list --user ID                                print the user's tokens as JSON (never the secret)
  token revoke --id TOKEN_ID                          revoke a token; prints nothing

"orders help token <command>" shows a command's options and an example.
`;

describe('orders keys rotate', () => {
  it('seals cursors under a new key and keeps the old one to open those given out', async () => {
    const rotated = await cli('keys', 'rotate');
    assert.deepEqual(rotated, {
      status: 0,
      out: 'rotated the cursor key: every process seals with the new one within a minute\n',
      err: '',
    });
    // Twice: the previous key is the one the first rotation made.
    assert.equal((await cli('keys', 'rotate')).status, 0);
  });
});

describe('orders --help', () => {
  it('is the general usage, listing every command with its synopsis', () => {
    assert.equal(
      USAGE,
      `usage: orders                      the server: serves the API on HOST:PORT (as make run starts it)
       orders <command> [options]
       orders help [<command>]     this text, or a command's options and an example
       orders <command> --help     the same as orders help <command>
       orders --version            the version

Commands:
  migrate                                                  apply pending migrations; prints their names
  seed                                                     load the demo catalog and users (idempotent); \
prints them as JSON
  user create --email E --name N [--role customer|admin]   create a user; prints it as JSON
  token create --user ID --scopes a,b,c [--ttl 30d]        print a new token, alone on one line (shown once)
  token list --user ID                                     print the user's tokens as JSON (never the secret)
  token revoke --id TOKEN_ID                               revoke a token; prints nothing
  idempotency purge                                        delete idempotency keys older than 24 hours; prints how many
  keys rotate                                              seal cursors under a new key, the old one still opening \
those given out; prints what it did

The database is DATABASE_URL, or the embedded one in DATA_DIR (default ./data).
A .env file in the working directory supplies variables the environment does not set.
Scopes: orders:read, orders:write, payments:read, payments:write, users:read, users:write, events:read, \
webhooks:write. TTL units: s, m, h, d.
Settings (PORT, HOST, DATABASE_URL, …) are listed in the README; a near miss of one is a warning.
Exit status: 0 done, 1 the command (or the server's start) failed, 2 a mistake in the command line, a setting or .env.`,
    );
  });

  it('prints it on stdout with status 0, as -h, help and help --help do', async () => {
    for (const argv of [['--help'], ['-h'], ['help'], ['help', '--help']]) {
      assert.deepEqual(await cli(...argv), { status: 0, out: `${USAGE}\n`, err: '' }, argv.join(' '));
    }
  });

  it("help <command>, and --help or -h anywhere among a command's arguments, print that command's help", async () => {
    for (const argv of [
      ['help', 'token', 'create'],
      ['--help', 'token', 'create'],
      ['token', 'create', '--help'],
      ['token', 'create', '-h'],
      ['token', 'create', '--user', '3', '--help'],
      ['token', 'create', '--usr', '3', '--help', '--scopes', 'nonsense'],
    ]) {
      assert.deepEqual(await cli(...argv), { status: 0, out: TOKEN_CREATE_HELP, err: '' }, argv.join(' '));
    }
  });

  it('says so when a command takes no options', async () => {
    assert.deepEqual(await cli('migrate', '--help'), {
      status: 0,
      out:
        'usage: orders migrate\n\nApply pending migrations; prints their names.\n\n' +
        'Options: none.\n\nExample:\n  orders migrate\n',
      err: '',
    });
  });

  it('marks optional options and shows their values', async () => {
    assert.deepEqual(await cli('help', 'user', 'create'), {
      status: 0,
      out: `usage: orders user create --email E --name N [--role customer|admin]

Create a user; prints it as JSON.

Options:
  --email E               required   the e-mail address, unique whatever its case
  --name N                required   the name shown for the user, 1 to 200 characters
  --role customer|admin   optional   customer (the default) or admin

Example:
  orders user create --email ops@example.com --name Ops --role admin
`,
      err: '',
    });
  });

  it('help token and token --help list the token commands', async () => {
    for (const argv of [
      ['help', 'token'],
      ['token', '--help'],
      ['token', '-h'],
    ]) {
      assert.deepEqual(await cli(...argv), { status: 0, out: TOKEN_HELP, err: '' }, argv.join(' '));
    }
  });

  it('neither reads the configuration or .env nor opens the database', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'orders-cli-help-'));
    try {
      writeFileSync(join(folder, '.env'), 'not a line of a .env file\n');
      const dataDir = join(folder, 'data');
      for (const argv of [['--help'], ['help', 'migrate'], ['migrate', '--help'], ['--version']]) {
        const status = await runCli(
          argv,
          { PORT: 'x', DATA_DIR: dataDir },
          { out: () => {}, err: (t) => assert.fail(t) },
          folder,
        );
        assert.equal(status, 0, argv.join(' '));
      }
      assert.equal(existsSync(dataDir), false);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

describe('orders --version', () => {
  it('prints the version of package.json alone on one line, as -v and version do', async () => {
    assert.match(VERSION, /^\d+\.\d+\.\d+/);
    for (const argv of [['--version'], ['-v'], ['version']]) {
      assert.deepEqual(await cli(...argv), { status: 0, out: `${VERSION}\n`, err: '' }, argv.join(' '));
    }
  });
});

describe('a mistake in the command line', () => {
  // Each: the line that says what is wrong; the usage follows it on stderr, status 2, nothing on stdout.
  const cases: [string[], string][] = [
    [[], 'no command given'],
    [['nothing'], 'unknown command "nothing"'],
    [['tokne', 'create', '--user', '3'], 'unknown command "tokne create"; did you mean "token create"?'],
    [['token', 'lsit'], 'unknown command "token lsit"; did you mean "token list"?'],
    [['token', 'burn'], 'unknown command "token burn"'],
    [['migrat'], 'unknown command "migrat"; did you mean "migrate"?'],
    [['sed', 'now'], 'unknown command "sed now"; did you mean "seed"?'],
    [['tokne'], 'unknown command "tokne"; did you mean "token"?'],
    [['help', 'tokne', 'create'], 'unknown command "tokne create"; did you mean "token create"?'],
    [['help', 'token', 'create', 'now'], 'unknown command "token create now"; did you mean "token create"?'],
    [['token'], '"token" needs a command: create, list or revoke'],
    [['token', '--user', '3'], '"token" needs a command: create, list or revoke'],
    [['idempotency'], '"idempotency" needs a command: purge'],
    [['--verison'], 'unknown option "--verison"; did you mean "--version"?'],
    [['--version', 'now'], '--version takes no arguments, got "now"'],
    [
      ['token', 'create', '--usr', '3', '--scopes', 'orders:read'],
      'unknown option "--usr" for "token create"; did you mean "--user"?',
    ],
    [
      ['token', 'create', '--user=3', '--scope=orders:read'],
      'unknown option "--scope" for "token create"; did you mean "--scopes"?',
    ],
    [
      ['user', 'create', '--email', 'x@example.com', '--name', 'X', '--colour', 'red'],
      'unknown option "--colour" for "user create"',
    ],
    [['migrate', 'extra'], 'unexpected argument "extra" for "migrate"'],
    [['token', 'list', '--user'], '--user needs a value'],
    [['token', 'list'], '--user is required'],
    [['token', 'revoke', '--id=3x'], '--id must be a positive integer, got "3x"'],
  ];
  for (const [argv, line] of cases) {
    it(`orders ${argv.join(' ')}: ${line}`, async () => {
      assert.deepEqual(await cli(...argv), { status: 2, out: '', err: `orders: ${line}\n\n${USAGE}\n` });
    });
  }
});

describe('a .env file in the working directory', () => {
  let folder: string;
  before(() => {
    folder = mkdtempSync(join(tmpdir(), 'orders-cli-env-'));
  });
  after(() => rmSync(folder, { recursive: true, force: true }));

  const dotEnv = (text: string) => writeFileSync(join(folder, '.env'), text);
  const inFolder = async (argv: string[], environment: Record<string, string>) => {
    let out = '';
    let err = '';
    const status = await runCli(argv, environment, { out: (t) => (out += t), err: (t) => (err += t) }, folder);
    return { status, out, err };
  };

  it('supplies the database to the tool', async () => {
    dotEnv(
      `# this run's database\n${Object.entries(env)
        .map(([name, value]) => `${name}="${value}"`)
        .join('\n')}\n`,
    );
    const created = await inFolder(['user', 'create', '--email', 'dotenv@example.com', '--name', 'Dotenv'], {});
    assert.equal(created.err, '');
    assert.equal(created.status, 0);
    // The same database as this file's other tests: the user is there.
    assert.deepEqual(await cli('token', 'list', '--user', String(JSON.parse(created.out).id)), {
      status: 0,
      out: '[]\n',
      err: '',
    });
  });

  it('gives way to the environment', async () => {
    dotEnv(
      `${Object.entries(env)
        .map(([name, value]) => `${name}=${value}`)
        .join('\n')}\nPORT=x\n`,
    );
    assert.deepEqual(await inFolder(['migrate'], { PORT: '3000' }), { status: 0, out: '', err: '' });
    assert.deepEqual(await inFolder(['migrate'], {}), {
      status: 1,
      out: '',
      err: 'orders: PORT must be an integer from 0 to 65535, got "x"\n',
    });
  });

  it('stops the tool with one line naming the file and the line when malformed, status 2', async () => {
    dotEnv('# settings\nLOG_LEVEL=warn\nPORT 3000\n');
    assert.deepEqual(await inFolder(['migrate'], env), {
      status: 2,
      out: '',
      err: 'orders: .env line 3: expected NAME=value, got a line without "=" after PORT\n',
    });
  });

  it('is read by the orders program (bin/orders.js) from its working directory', async () => {
    dotEnv('# settings\nLOG_LEVEL=warn\nPORT 3000\n');
    const program = new URL('../../bin/orders.js', import.meta.url).pathname;
    const run = promisify(execFile);
    const failed = await run(process.execPath, [program, 'migrate'], {
      cwd: folder,
      env: { ...process.env, DATABASE_READ_URL: '', ...env },
    }).then(
      () => assert.fail('exit status 0'),
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    assert.deepEqual(
      { code: failed.code, stdout: failed.stdout, stderr: failed.stderr },
      {
        code: 2,
        stdout: '',
        stderr: 'orders: .env line 3: expected NAME=value, got a line without "=" after PORT\n',
      },
    );
    // Help and the version do not read it.
    assert.deepEqual(await run(process.execPath, [program, '--version'], { cwd: folder }), {
      stdout: `${VERSION}\n`,
      stderr: '',
    });
  });
});
