/**
 * A private PgBouncer (Debian's 1.18) in transaction pooling mode, on a free
 * loopback port in front of the real PostgreSQL server, started with the
 * configuration docs/operations.md gives (test/fixtures/pgbouncer.ini.template,
 * its addresses replaced; SCRAM authentication as printed). A test can restart it on the
 * same port, as an operator's restart would.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, createHmac, pbkdf2Sync } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findProgram, freePort, untilListening } from './tools.ts';

export const PGBOUNCER_TEMPLATE = readFileSync(new URL('../fixtures/pgbouncer.ini.template', import.meta.url), 'utf8');

/** pgbouncer on PATH, or where Debian puts it. */
export const PGBOUNCER = findProgram(['pgbouncer', '/usr/sbin/pgbouncer'], ['--version']);
export const PGBOUNCER_MISSING =
  PGBOUNCER === undefined && 'pgbouncer is not installed (Debian: apt-get install pgbouncer); CI installs it';

/** The role a client logs in to PgBouncer as, and its password (auth_file holds its SCRAM secret). */
export const USER = 'postgres';
export const PASSWORD = 'orders-pgbouncer-test';

/**
 * The SCRAM-SHA-256 secret of `password` as PostgreSQL stores it in `pg_authid.rolpassword` and PgBouncer reads it
 * from `auth_file` (RFC 5802, RFC 7677): `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`.
 */
export function scramSecret(password: string, salt = fixedSalt(password), iterations = 4096): string {
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  const [salt64, stored64, server64] = [salt, storedKey, serverKey].map((bytes) => bytes.toString('base64'));
  return `SCRAM-SHA-256$${iterations}:${salt64}$${stored64}:${server64}`;
}

/**
 * A salt made from the password, so that every secret of one password is the same: a test's own PgBouncer in front
 * of CI's (the suite through PgBouncer) logs in to it with the client's SCRAM keys, which needs one secret on both.
 * Tests only: a real secret's salt is random, as PostgreSQL makes it.
 */
function fixedSalt(password: string): Buffer {
  return createHash('sha256').update(`salt:${password}`).digest().subarray(0, 16);
}

export interface PgBouncer {
  readonly port: number;
  /** `serverUrl` (a postgres:// URL of the real server) with PgBouncer's host and port instead. */
  url(serverUrl: string): string;
  /** Stops it at once (SIGTERM: every client and server connection is cut), then starts it on the same port. */
  restart(): Promise<void>;
  /** What it logged. */
  log(): string;
  stop(): Promise<void>;
}

/**
 * Starts PgBouncer in front of `server` (the real server's host and port), with `poolSize` server connections;
 * `ignoreStartupParameters` as an operator may add to let a client's startup parameters through (unapplied).
 */
export async function startPgBouncer(
  server: { readonly host: string; readonly port: number },
  { poolSize = 20, ignoreStartupParameters }: { poolSize?: number; ignoreStartupParameters?: string } = {},
): Promise<PgBouncer> {
  assert.ok(PGBOUNCER, 'pgbouncer is not installed');
  const dir = mkdtempSync(join(tmpdir(), 'orders-pgbouncer-'));
  const port = await freePort();
  const replace = (text: string, from: string, to: string) => {
    assert.equal(text.split(from).length, 2, `the template holds ${from} exactly once`);
    return text.replace(from, to);
  };
  let ini = replace(PGBOUNCER_TEMPLATE, '* = host=127.0.0.1 port=5432', `* = host=${server.host} port=${server.port}`);
  ini = replace(ini, 'listen_port = 6432', `listen_port = ${port}`);
  // The printed authentication: SCRAM against the secret of auth_file. The test server trusts loopback, so
  // PgBouncer's own login to it needs no password; a client must give PASSWORD.
  ini = replace(ini, '/etc/pgbouncer/userlist.txt', join(dir, 'userlist.txt'));
  ini = replace(ini, 'default_pool_size = 20', `default_pool_size = ${poolSize}`);
  ini += 'unix_socket_dir =\n';
  if (ignoreStartupParameters !== undefined) ini += `ignore_startup_parameters = ${ignoreStartupParameters}\n`;
  writeFileSync(join(dir, 'pgbouncer.ini'), ini);
  writeFileSync(join(dir, 'userlist.txt'), `"${USER}" "${scramSecret(PASSWORD)}"\n`);
  // PgBouncer refuses to run as root: as root, it switches to the postgres user, who must read these.
  chmodSync(dir, 0o755);
  const asRoot = process.getuid?.() === 0;
  let child: ChildProcess | undefined;
  let output = '';
  const start = async () => {
    const started = spawn(PGBOUNCER as string, [...(asRoot ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = started;
    started.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    started.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await untilListening(
      port,
      () => started.exitCode !== null,
      () => output,
    );
  };
  const halt = async () => {
    const running = child;
    child = undefined;
    if (running === undefined || running.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    running.kill('SIGTERM');
    await exited;
  };
  await start();
  return {
    port,
    url(serverUrl) {
      const url = new URL(serverUrl);
      url.hostname = '127.0.0.1';
      url.port = String(port);
      url.username = USER;
      url.password = PASSWORD;
      return url.toString();
    },
    async restart() {
      await halt();
      await start();
    },
    log: () => output,
    async stop() {
      await halt();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
