/**
 * Start-up checks what it can before it changes anything (contract §1): the
 * port and host before the database is opened or created (so a failed first
 * start leaves no data directory and shows no token), `.env` names the
 * service does not know, and a database that does not answer is waited for
 * within `DATABASE_WAIT`, each attempt said at a bounded rate, then exit 1.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { runCli } from '../../src/cli.ts';
import { REAL_SERVER_URL, TEST_PREPARE } from '../support/database.ts';
import { startProxy } from '../support/proxy.ts';
import { PASSWORD, PGBOUNCER_MISSING, startPgBouncer, USER } from '../support/pgbouncer.ts';
import { spawnService, startService } from '../support/process.ts';
import { freePort } from '../support/tools.ts';

/** The exit code and what was printed, once the service spawned with `env` (in `cwd`) exits. */
async function exited(env: Record<string, string>, cwd?: string) {
  const child = spawnService(env, undefined, undefined, cwd);
  const [code] = (await once(child.process, 'exit')) as [number];
  return { code, stdout: child.stdout(), stderr: child.stderr() };
}

/** Lines of the JSON log with `message`. */
function logged(stdout: string, message: string): Record<string, unknown>[] {
  return stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.message === message);
}

describe('start-up checks the port before it creates anything (contract §1)', () => {
  let dir: string;
  let taken: Server;
  let port: number;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'orders-start-'));
    taken = createServer().listen(0, '127.0.0.1');
    await once(taken, 'listening');
    port = (taken.address() as { port: number }).port;
  });

  after(() => {
    taken.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a port in use on a first start: exit 1 naming PORT, no data directory, no token shown', async () => {
    const dataDir = join(dir, 'data');
    const run = await exited({ DATA_DIR: dataDir, PORT: String(port) });
    assert.equal(run.code, 1);
    assert.equal(
      run.stderr,
      `orders: cannot start: PORT ${port} is in use on 127.0.0.1 (another process listens there); ` +
        'set PORT to a free port\n',
    );
    assert.equal(existsSync(dataDir), false);
  });

  it('a HOST that is no address of this machine: exit 1 naming HOST, and the .env line that set it', async () => {
    const cwd = mkdtempSync(join(dir, 'env-'));
    writeFileSync(join(cwd, '.env'), `# the machine's address\nHOST=999.1.1.1\nDATA_DIR=${join(cwd, 'data')}\n`);
    const run = await exited({}, cwd);
    assert.equal(run.code, 1);
    const code = /\((ENOTFOUND|EAI_AGAIN)\)/.exec(run.stderr)?.[1];
    assert.equal(
      run.stderr,
      `orders: cannot start: HOST 999.1.1.1 is not an address of this machine (${code}); set HOST to one of its ` +
        'addresses, such as 127.0.0.1, or 0.0.0.0 for all (.env line 2)\n',
    );
    assert.equal(existsSync(join(cwd, 'data')), false);
  });

  it('an invalid value from .env names its line', async () => {
    const cwd = mkdtempSync(join(dir, 'env-'));
    writeFileSync(join(cwd, '.env'), `DATA_DIR=${join(cwd, 'data')}\nDB_POOL_MAX=0\n`);
    const run = await exited({}, cwd);
    assert.equal(run.code, 2);
    assert.equal(
      run.stderr,
      'orders: invalid configuration: DB_POOL_MAX must be an integer from 1 to 1000, got "0" (.env line 2)\n',
    );
    assert.equal(existsSync(join(cwd, 'data')), false);
  });
});

describe('names in .env the service does not know (contract §1)', () => {
  let cwd: string;

  before(() => {
    cwd = mkdtempSync(join(tmpdir(), 'orders-env-'));
    writeFileSync(
      join(cwd, '.env'),
      `DATA_DIR=${join(cwd, 'data')}\nDATABSE_URL=postgres://nobody@127.0.0.1:1/orders\nFAVOURITE_COLOUR=blue\n` +
        'PGAPPNAME=orders\n',
    );
  });

  after(() => rmSync(cwd, { recursive: true, force: true }));

  it('are each a warning with the closest setting, and the start goes on', async () => {
    const service = await startService({ LOG_LEVEL: 'warn' }, undefined, undefined, undefined, cwd);
    try {
      const warnings = service
        .stderr()
        .split('\n')
        .filter((line) => line.includes('warning'));
      assert.deepEqual(warnings, [
        'orders: warning: .env line 2: DATABSE_URL is not a setting of the service; did you mean DATABASE_URL?',
        'orders: warning: .env line 3: FAVOURITE_COLOUR is not a setting of the service (it is ignored)',
      ]);
    } finally {
      service.process.kill('SIGTERM');
      await once(service.process, 'exit');
    }
  });

  it('with ENV_STRICT=1 stop the start (exit 2) before anything is created', async () => {
    rmSync(join(cwd, 'data'), { recursive: true, force: true });
    const run = await exited({ ENV_STRICT: '1' }, cwd);
    assert.equal(run.code, 2);
    assert.equal(
      run.stderr,
      'orders: .env line 2: DATABSE_URL is not a setting of the service; did you mean DATABASE_URL?\n' +
        '.env line 3: FAVOURITE_COLOUR is not a setting of the service (it is ignored) (ENV_STRICT=1)\n',
    );
    assert.equal(existsSync(join(cwd, 'data')), false);
  });

  it('are warnings of the command-line tool too, and ENV_STRICT=1 its exit 2', async () => {
    let err = '';
    const io = { out: () => {}, err: (t: string) => (err += t) };
    rmSync(join(cwd, 'data'), { recursive: true, force: true });
    assert.equal(await runCli(['migrate'], { ENV_STRICT: '1' }, io, cwd), 2);
    assert.match(
      err,
      /^orders: \.env line 2: DATABSE_URL is not a setting of the service; did you mean DATABASE_URL\?\n/,
    );
    assert.equal(existsSync(join(cwd, 'data')), false);
    err = '';
    assert.equal(await runCli(['migrate'], {}, io, cwd), 0);
    assert.equal(
      err,
      'orders: warning: .env line 2: DATABSE_URL is not a setting of the service; did you mean DATABASE_URL?\n' +
        'orders: warning: .env line 3: FAVOURITE_COLOUR is not a setting of the service (it is ignored)\n',
    );
  });
});

describe('a near miss of a setting in the environment (not .env)', () => {
  it('is a warning naming the setting; ENV_STRICT=1 stops the start (exit 2) before anything is made', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'orders-env-'));
    try {
      const dataDir = join(cwd, 'data');
      const service = await startService({ DATA_DIR: dataDir, DATABSE_URL: 'postgres://nobody@127.0.0.1:1/orders' });
      try {
        assert.deepEqual(
          service
            .stderr()
            .split('\n')
            .filter((line) => line.includes('warning')),
          ['orders: warning: environment: DATABSE_URL is not a setting of the service; did you mean DATABASE_URL?'],
        );
      } finally {
        service.process.kill('SIGTERM');
        await once(service.process, 'exit');
      }
      rmSync(dataDir, { recursive: true, force: true });
      const run = await exited({ DATA_DIR: dataDir, DATABSE_URL: 'x', ENV_STRICT: '1' });
      assert.equal(run.code, 2);
      assert.equal(
        run.stderr,
        'orders: environment: DATABSE_URL is not a setting of the service; did you mean DATABASE_URL? (ENV_STRICT=1)\n',
      );
      assert.equal(existsSync(dataDir), false);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });
});

describe('a database that does not answer at start (DATABASE_WAIT)', () => {
  it('is waited for with backoff, logged at most once a second, then exit 1 naming DATABASE_WAIT', async () => {
    const dead = await freePort();
    const proxy = await startProxy({ host: '127.0.0.1', port: dead });
    try {
      const started = performance.now();
      const run = await exited({
        DATABASE_URL: `postgres://postgres@127.0.0.1:${proxy.port}/orders`,
        DATABASE_WAIT: '3',
        LOG_LEVEL: 'warn',
      });
      const seconds = (performance.now() - started) / 1000;
      assert.equal(run.code, 1);
      assert.match(
        run.stderr,
        /^orders: cannot start: the database did not answer within DATABASE_WAIT \(3 s, \d+ attempts\): .+\n$/,
      );
      const attempts = logged(run.stdout, 'database not answering; waiting (DATABASE_WAIT)');
      assert.ok(attempts.length >= 2 && attempts.length <= 4, run.stdout);
      assert.deepEqual(Object.keys(attempts[0] ?? {}).slice(3), ['attempt', 'reason', 'nextInMs', 'waitedMs']);
      assert.equal(attempts[0]?.nextInMs, 250);
      // Connections made: the attempts with backoff and the circuit's probe, not hundreds a second.
      assert.ok(proxy.accepted <= 3 * 10, `${proxy.accepted} connections in ${seconds.toFixed(1)} s`);
    } finally {
      await proxy.close();
    }
  });

  it('DATABASE_WAIT=0 fails at the first attempt, which has its usual time', async () => {
    const dead = await freePort();
    const run = await exited({ DATABASE_URL: `postgres://postgres@127.0.0.1:${dead}/orders`, DATABASE_WAIT: '0' });
    assert.equal(run.code, 1);
    assert.match(
      run.stderr,
      /^orders: cannot start: the database did not answer within DATABASE_WAIT \(0 s, 1 attempt\): connect ECONNREF/,
    );
  });

  it('names a peer that is not PostgreSQL (an HTTP server at DATABASE_URL) by what it answered', async () => {
    const http = createHttpServer((_, response) => response.end('hello'));
    http.listen(0, '127.0.0.1');
    await once(http, 'listening');
    try {
      const { port } = http.address() as { port: number };
      const run = await exited({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/orders`, DATABASE_WAIT: '1' });
      assert.equal(run.code, 1);
      assert.match(
        run.stderr,
        new RegExp(
          '^orders: cannot start: the database did not answer within DATABASE_WAIT \\(1 s, \\d+ attempts?\\): ' +
            `.*; 127\\.0\\.0\\.1:${port} is not PostgreSQL: it answered "HTTP/1\\.1 400 Bad Request.*"\\n$`,
        ),
      );
    } finally {
      http.close();
    }
  });

  it('with WORKERS=2 is waited for once, by the primary: one line per attempt, one line to end', async () => {
    const dead = await freePort();
    const run = await exited({
      DATABASE_URL: `postgres://postgres@127.0.0.1:${dead}/orders`,
      DATABASE_WAIT: '2',
      WORKERS: '2',
      LOG_LEVEL: 'warn',
    });
    assert.equal(run.code, 1);
    assert.match(
      run.stderr,
      /^orders: cannot start: the database did not answer within DATABASE_WAIT \(2 s, \d+ attempts\): connect .*\n$/,
    );
    // One process waits: its attempts counted once (two workers would each log an attempt 1), within the rate.
    const attempts = logged(run.stdout, 'database not answering; waiting (DATABASE_WAIT)').map((a) => a.attempt);
    assert.equal(attempts[0], 1, run.stdout);
    assert.deepEqual(
      attempts,
      [...new Set(attempts)].sort((a, b) => Number(a) - Number(b)),
      run.stdout,
    );
    assert.ok(attempts.length <= 3, run.stdout);
  });

  it("is the command-line tool's wait too", async () => {
    const dead = await freePort();
    let err = '';
    const status = await runCli(
      ['migrate'],
      { DATABASE_URL: `postgres://postgres@127.0.0.1:${dead}/orders`, DATABASE_WAIT: '1' },
      { out: () => {}, err: (t) => (err += t) },
    );
    assert.equal(status, 1);
    const lines = err.trimEnd().split('\n');
    assert.match(
      lines[0] ?? '',
      /^orders: the database does not answer \(attempt 1: connect ECONNREFUSED .*\); next in 250 ms$/,
    );
    assert.match(
      lines.at(-1) ?? '',
      /^orders: the database did not answer within DATABASE_WAIT \(1 s, \d+ attempts\): connect ECONNREFUSED/,
    );
  });

  it('through PgBouncer whose PostgreSQL is down: the same bounded attempts, then exit 1', {
    skip: PGBOUNCER_MISSING,
  }, async () => {
    const pgbouncer = await startPgBouncer({ host: '127.0.0.1', port: await freePort() });
    const proxy = await startProxy({ host: '127.0.0.1', port: pgbouncer.port });
    try {
      const started = performance.now();
      const run = await exited({
        DATABASE_URL: `postgres://${USER}:${PASSWORD}@127.0.0.1:${proxy.port}/orders`,
        DB_PREPARE: 'off',
        DATABASE_WAIT: '6',
        LOG_LEVEL: 'warn',
      });
      const seconds = (performance.now() - started) / 1000;
      assert.equal(run.code, 1, run.stderr);
      // PgBouncer holds each login while it retries its server: an attempt ends at its 5 s bound.
      assert.match(
        run.stderr,
        new RegExp(
          '^orders: cannot start: the database did not answer within DATABASE_WAIT \\(6 s, 2 attempts\\): ' +
            `CONNECT_TIMEOUT: no answer within .*; 127\\.0\\.0\\.1:${proxy.port} speaks PostgreSQL but did ` +
            'not let the login finish \\(a pooler waiting for its server\\?\\)\\n$',
        ),
      );
      const attempts = logged(run.stdout, 'database not answering; waiting (DATABASE_WAIT)');
      assert.deepEqual(
        attempts.map((a) => [a.attempt, a.nextInMs]),
        [[1, 250]],
      );
      assert.match(String(attempts[0]?.reason), /CONNECT_TIMEOUT/);
      // Before: about 190 logins a second for as long as the database was down.
      assert.ok(proxy.accepted <= 4, `${proxy.accepted} logins to PgBouncer in ${seconds.toFixed(1)} s`);
    } finally {
      await proxy.close();
      await pgbouncer.stop();
    }
  });
});

describe('a login refused at start', { skip: PGBOUNCER_MISSING }, () => {
  it('(a wrong password through PgBouncer: 08P01 "SASL authentication failed") is exit 1 at once', async () => {
    const pgbouncer = await startPgBouncer({ host: '127.0.0.1', port: await freePort() });
    try {
      const url = new URL(pgbouncer.url('postgres://postgres@127.0.0.1/orders'));
      url.password = 'not-the-password';
      const run = await exited({ DATABASE_URL: url.toString(), DB_PREPARE: 'off', LOG_LEVEL: 'warn' });
      assert.equal(run.code, 1);
      assert.equal(run.stderr, `orders: cannot start: SASL authentication failed; ${PASSWORD_FIX}\n`);
      assert.deepEqual(logged(run.stdout, 'database not answering; waiting (DATABASE_WAIT)'), []);
      assert.equal(`${run.stdout}${run.stderr}`.includes('not-the-password'), false, 'the password is never shown');
    } finally {
      await pgbouncer.stop();
    }
  });
});

const PASSWORD_FIX =
  "put the role's right password in DATABASE_URL (percent-encoded) or PGPASSWORD; an administrator may set it " +
  "with ALTER ROLE … PASSWORD '…'";

describe('a database, role or server that refuses at start: one line with the cause and the fix', {
  skip:
    REAL_SERVER_URL === undefined
      ? 'needs a real PostgreSQL server'
      : TEST_PREPARE
        ? false
        : "through the suite's PgBouncer the refusals are PgBouncer's own (its auth_file knows one user)",
}, () => {
  const server = new URL(REAL_SERVER_URL as string);
  const suffix = randomBytes(4).toString('hex');
  const role = `orders_hint_${suffix}`;
  const readOnly = `orders_hint_ro_${suffix}`;
  const secret = `secret-${suffix}`;
  let admin: ReturnType<typeof postgres>;
  /** `DATABASE_URL` on the test server, as `user` (with `password`), on `database`. */
  const at = (user: string, database: string, password?: string) => {
    const url = new URL(server.toString());
    url.username = user;
    url.password = password ?? '';
    url.pathname = `/${database}`;
    return url.toString();
  };
  const start = async (url: string) => {
    const run = await exited({
      DATABASE_URL: url,
      DATABASE_WAIT: '0',
      LOG_LEVEL: 'warn',
      ...(TEST_PREPARE ? {} : { DB_PREPARE: 'off' }),
    });
    assert.equal(run.code, 1);
    assert.equal(`${run.stdout}${run.stderr}`.includes(secret), false, 'the password is never shown');
    return run.stderr;
  };

  before(async () => {
    admin = postgres(REAL_SERVER_URL as string, { max: 1, onnotice: () => {} });
    await admin.unsafe(`CREATE ROLE ${role} LOGIN PASSWORD '${secret}'`);
    await admin.unsafe(`CREATE DATABASE ${readOnly}`);
    await admin.unsafe(`ALTER DATABASE ${readOnly} SET default_transaction_read_only = on`);
  });
  after(async () => {
    await admin.unsafe(`DROP DATABASE IF EXISTS ${readOnly} WITH (FORCE)`);
    await admin.unsafe(`DROP ROLE IF EXISTS ${role}`);
    await admin.end();
  });

  it('a database that does not exist, to the server and to the command-line tool', async () => {
    const line =
      `database "no_such_${suffix}" does not exist; create the database (CREATE DATABASE … ` +
      'OWNER …, or createdb) or name an existing one in DATABASE_URL\n';
    const url = at(server.username, `no_such_${suffix}`, server.password);
    assert.equal(await start(url), `orders: cannot start: ${line}`);
    let err = '';
    const io = { out: () => {}, err: (t: string) => (err += t) };
    assert.equal(await runCli(['migrate'], { DATABASE_URL: url, DATABASE_WAIT: '0' }, io), 1);
    assert.equal(err, `orders: ${line}`);
  });
  it('a role that does not exist', async () => {
    assert.equal(
      await start(at(`nobody_${suffix}`, server.pathname.slice(1), secret)),
      `orders: cannot start: role "nobody_${suffix}" does not exist; create the role (CREATE ROLE … LOGIN ` +
        "PASSWORD '…') or name an existing one in DATABASE_URL\n",
    );
  });
  it('a role that may not create the tables', async () => {
    assert.equal(
      await start(at(role, server.pathname.slice(1), secret)),
      'orders: cannot start: permission denied for schema public; let the role create in the ' +
        'schema (GRANT CREATE ON SCHEMA public TO …) or make it the owner\n',
    );
  });
  it('a server that takes no writes', async () => {
    assert.equal(
      await start(at(server.username, readOnly, server.password)),
      'orders: cannot start: cannot execute CREATE TABLE in a read-only transaction; the server takes no writes ' +
        '(a standby, or default_transaction_read_only): point DATABASE_URL at the primary, or list every host with ' +
        'target_session_attrs=read-write\n',
    );
  });
});
