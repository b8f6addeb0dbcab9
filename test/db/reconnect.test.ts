/**
 * Reconnecting without a storm (contract §17; the driver's patch 012 and the
 * circuit of src/db/circuit.ts): a server that accepts connections and
 * closes them (a load balancer with no healthy backend, a pooler whose
 * server is down) fails each statement at once, attempts are paced by the
 * backoff, and while the circuit is open one probe at a time tries. Several
 * hosts (libpq's `host1,host2` with `target_session_attrs`) are tried once a
 * round, never for ever.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { after, describe, it } from 'node:test';
import { reconnectDelaySeconds } from '../../src/db/connection.ts';
import { openDatabase, type Database } from '../../src/db/database.ts';
import { FAILURES_TO_OPEN } from '../../src/db/circuit.ts';
import { REAL_SERVER_URL, TEST_PREPARE } from '../support/database.ts';

/** A TCP server that accepts each connection and closes it at once, counting them. */
async function acceptAndClose(): Promise<{ server: Server; port: number; readonly attempts: number }> {
  let attempts = 0;
  const server = createServer((socket) => {
    attempts += 1;
    socket.destroy();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    server,
    port: (server.address() as AddressInfo).port,
    get attempts() {
      return attempts;
    },
  };
}

const open = (url: string, poolMax = 10) =>
  openDatabase({ databaseUrl: url, dataDir: '', poolMax, prepare: TEST_PREPARE });

/** The error `work` rejects with (it must reject). */
async function failure(work: Promise<unknown>): Promise<{ code?: string; name: string }> {
  try {
    await work;
  } catch (error) {
    return error as { code?: string; name: string };
  }
  throw new Error('it did not fail');
}

const closing: (Database | Server)[] = [];
after(async () => {
  for (const it of closing) {
    if ('close' in it && 'kind' in it) await it.close(0);
    else (it as Server).close();
  }
});

describe('reconnectDelaySeconds()', () => {
  it('waits 50 ms after the first failure, doubling up to 1 s, half of it random', () => {
    const at = (retries: number, random: number) => reconnectDelaySeconds(retries, () => random);
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6, 10].map((r) => at(r, 1)),
      [0.05, 0.1, 0.2, 0.4, 0.8, 1, 1],
    );
    assert.deepEqual(
      [1, 6].map((r) => at(r, 0)),
      [0.025, 0.5],
    );
  });
});

describe('a server that accepts and closes every connection', () => {
  it('fails each statement at once, then refuses them unsent while one probe at a time tries', async () => {
    const fake = await acceptAndClose();
    closing.push(fake.server);
    const db = await open(`postgres://orders@127.0.0.1:${fake.port}/orders`);
    closing.push(db);
    const codes = new Map<string, number>();
    const count = (error: { code?: string; name: string }) => {
      const code = error.code ?? error.name;
      codes.set(code, (codes.get(code) ?? 0) + 1);
    };
    // One statement at a time until the circuit opens: each reached the server and failed (the connection closed
    // before it was ready). Awaited one by one, so that how fast this machine is decides nothing.
    let sent = 0;
    while (!db.pool.circuitOpen && sent < FAILURES_TO_OPEN + 2) {
      count(await failure(db.one('Ping')));
      sent += 1;
    }
    assert.equal(sent, FAILURES_TO_OPEN);
    assert.deepEqual([...codes], [['CONNECTION_CLOSED', FAILURES_TO_OPEN]]);
    // Then statements as requests send them, 50 a second for 2 s: refused without a connection.
    const started = performance.now();
    const statements: Promise<void>[] = [];
    while (performance.now() - started < 2_000) {
      statements.push(failure(db.one('Ping')).then(count));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await Promise.all(statements);
    assert.equal(codes.get('CONNECTION_CLOSED'), FAILURES_TO_OPEN);
    assert.equal(codes.get('DATABASE_UNREACHABLE'), statements.length);
    assert.equal(db.pool.circuitOpen, true);
    // The failures, then the probes: 50 ms doubling to 1 s in 2 s is at most 7 of them (the driver's own loop
    // tried thousands of times a second).
    assert.ok(fake.attempts <= FAILURES_TO_OPEN + 8, `${fake.attempts} connection attempts in 2 s`);
  });
});

describe('several hosts (target_session_attrs, patch 012)', () => {
  it('fails a statement once every host was tried, not for ever', async () => {
    const [a, b] = [await acceptAndClose(), await acceptAndClose()];
    closing.push(a.server, b.server);
    const db = await open(`postgres://orders@127.0.0.1:${a.port},127.0.0.1:${b.port}/orders`, 1);
    closing.push(db);
    const error = await failure(db.one('Ping'));
    assert.equal(error.code, 'CONNECTION_CLOSED');
    assert.deepEqual([a.attempts, b.attempts], [1, 1]);
  });

  const real = REAL_SERVER_URL === undefined ? undefined : new URL(REAL_SERVER_URL);
  // The run's user and password (through PgBouncer, SCRAM) on several hosts.
  const login =
    real === undefined ? 'postgres' : `${real.username || 'postgres'}${real.password ? `:${real.password}` : ''}`;
  const hosts = (...list: string[]) => `postgres://${login}@${list.join(',')}/${real?.pathname.slice(1) || 'postgres'}`;
  const server = real === undefined ? '' : `${real.hostname}:${real.port || 5432}`;
  const skip = real === undefined ? 'needs a real PostgreSQL server' : false;

  it('takes the next host when one refuses, for read-write', { skip }, async () => {
    const refusing = await acceptAndClose();
    closing.push(refusing.server);
    const db = await open(`${hosts(`127.0.0.1:${refusing.port}`, server)}?target_session_attrs=read-write`, 1);
    closing.push(db);
    assert.deepEqual(await db.one('Ping'), { ok: 1 });
  });

  it('fails with TARGET_SESSION_ATTRS when no host is a standby, after one round', { skip }, async () => {
    const db = await open(`${hosts(server, server)}?target_session_attrs=standby`, 1);
    closing.push(db);
    const error = await failure(db.one('Ping'));
    assert.equal(error.code, 'TARGET_SESSION_ATTRS');
  });

  it('settles for a primary when no host is a standby, for prefer-standby', { skip }, async () => {
    const db = await open(`${hosts(server, server)}?target_session_attrs=prefer-standby`, 1);
    closing.push(db);
    assert.deepEqual(await db.one('Ping'), { ok: 1 });
  });
});
