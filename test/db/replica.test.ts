/**
 * Read replicas (contract §17) against a real standby: a private primary and
 * a streaming standby built with PostgreSQL's own tools (test/support/replica.ts),
 * the service on both (`DATABASE_READ_URL`, `REPLICA_MAX_LAG=2`), and the
 * standby's replay paused and resumed:
 *
 * - a customer's POST then GET → 200 (read-your-writes: the primary answers);
 * - a PATCH then `If-None-Match` with the old tag → 200 with the new tag;
 * - a tag newer than the standby holds → the primary answers (304), never an
 *   older 200;
 * - another customer's reads land on the standby (its statistics count them);
 * - lag past the bound → the primary answers, `/readyz` says so;
 * - the standby stopped → reads keep working, each within 2 s.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import postgres from 'postgres';
import { createToken } from '../../src/auth/token-store.ts';
import { SCOPES } from '../../src/auth/tokens.ts';
import { createLogger } from '../../src/base/logger.ts';
import { loadConfig } from '../../src/config/config.ts';
import { seed } from '../../src/service/seed.ts';
import { startServer, type RunningServer } from '../../src/service/server.ts';
import { createUser } from '../../src/users/store.ts';
import { REPLICA_MISSING, startReplicaPair, type ReplicaPair } from '../support/replica.ts';
import { slack } from '../support/time.ts';

const DATABASE = 'orders_replica_test';

let pair: ReplicaPair;
let server: RunningServer;
let standby: postgres.Sql;
const logs: Record<string, unknown>[] = [];
let users = 0;

/** A new user of `role` with every scope: their bearer field. */
async function account(role: 'customer' | 'admin'): Promise<{ id: number; auth: Record<string, string> }> {
  users += 1;
  const user = await createUser(server.db, { email: `${role}${users}@replica.test`, name: `Replica ${users}`, role });
  const { token } = await createToken(server.db, user.id, SCOPES, null);
  return { id: user.id, auth: { authorization: `Bearer ${token}` } };
}

const call = (path: string, init: RequestInit = {}) => fetch(`${server.url}${path}`, init);

/** The index and sequential scans of `orders` on the standby so far (its own statistics). */
async function standbyReads(): Promise<number> {
  const [row] = await standby<{ n: number }[]>`
    SELECT (coalesce(idx_scan, 0) + coalesce(seq_scan, 0))::int AS n
    FROM pg_stat_user_tables WHERE relname = 'orders'`;
  return row?.n ?? 0;
}

/** Resolves once `/readyz` says the replica is in `state`. */
async function replicaState(state: string): Promise<void> {
  for (const deadline = Date.now() + 10_000; ; ) {
    const body = await (await call('/readyz')).json();
    if (body.replica?.state === state) return;
    if (Date.now() > deadline) assert.fail(`the replica is ${body.replica?.state}, not ${state}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('a read replica (contract §17)', { skip: REPLICA_MISSING }, () => {
  before(async () => {
    pair = await startReplicaPair();
    await pair.createDatabase(DATABASE);
    const config = loadConfig({
      PORT: '0',
      RATE_LIMIT: 'off',
      DATABASE_URL: pair.primaryUrl(DATABASE),
      DATABASE_READ_URL: pair.standbyUrl(DATABASE),
      REPLICA_MAX_LAG: '2',
    });
    server = await startServer(config, {
      log: createLogger('info', (line) => logs.push(JSON.parse(line) as Record<string, unknown>)),
      tuning: { replicaPollMs: 50 },
    });
    await seed(server.db);
    standby = postgres(pair.standbyUrl(DATABASE), { max: 1, onnotice: () => {} });
    await pair.caughtUp();
    await replicaState('in-use');
  });
  after(async () => {
    await server?.close(1_000);
    await standby?.end();
    await pair?.stop();
  });

  it('answers a customer’s GET of the order it just created, replay paused: from the primary', async () => {
    const customer = await account('customer');
    await pair.caughtUp();
    await pair.pauseReplay();
    try {
      const created = await call('/v1/orders', {
        method: 'POST',
        headers: { ...customer.auth, 'content-type': 'application/json' },
        body: '{"items":[{"productId":1,"qty":2}]}',
      });
      assert.equal(created.status, 201);
      const { id } = await created.json();
      // The standby has not replayed it: only the primary can answer.
      assert.equal((await standby`SELECT 1 FROM orders WHERE id = ${id}`).length, 0);
      const read = await call(`/v1/orders/${id}`, { headers: customer.auth });
      assert.equal(read.status, 200);
      assert.equal((await read.json()).id, id);
      const list = await (await call('/v1/orders', { headers: customer.auth })).json();
      assert.deepEqual(
        list.data.map((o: { id: number }) => o.id),
        [id],
      );
    } finally {
      await pair.resumeReplay();
    }
  });

  it('answers a PATCH then If-None-Match with the old tag with 200 and the new tag, replay paused', async () => {
    const customer = await account('customer');
    const created = await call('/v1/orders', {
      method: 'POST',
      headers: { ...customer.auth, 'content-type': 'application/json' },
      body: '{"items":[{"productId":2,"qty":1}]}',
    });
    const { id } = await created.json();
    const oldTag = created.headers.get('etag') as string;
    await pair.caughtUp();
    await pair.pauseReplay();
    try {
      const patched = await call(`/v1/orders/${id}`, {
        method: 'PATCH',
        headers: { ...customer.auth, 'content-type': 'application/merge-patch+json' },
        body: '{"status":"cancelled"}',
      });
      assert.equal(patched.status, 200);
      const newTag = patched.headers.get('etag') as string;
      assert.notEqual(newTag, oldTag);
      const read = await call(`/v1/orders/${id}`, { headers: { ...customer.auth, 'if-none-match': oldTag } });
      assert.equal(read.status, 200);
      assert.equal(read.headers.get('etag'), newTag);
      assert.equal((await read.json()).status, 'cancelled');
    } finally {
      await pair.resumeReplay();
    }
  });

  it('answers a tag newer than the standby holds from the primary: 304, never the older 200', async () => {
    const admin = await account('admin');
    const customer = await account('customer');
    const created = await call('/v1/orders', {
      method: 'POST',
      headers: { ...customer.auth, 'content-type': 'application/json' },
      body: '{"items":[{"productId":3,"qty":1}]}',
    });
    const { id } = await created.json();
    await pair.caughtUp();
    await pair.pauseReplay();
    try {
      // Another principal changes the order; the customer learns its new tag somehow (a webhook, say).
      const patched = await call(`/v1/orders/${id}`, {
        method: 'PATCH',
        headers: { ...admin.auth, 'content-type': 'application/merge-patch+json' },
        body: '{"status":"cancelled"}',
      });
      const newTag = patched.headers.get('etag') as string;
      const read = await call(`/v1/orders/${id}`, { headers: { ...customer.auth, 'if-none-match': newTag } });
      assert.equal(read.status, 304);
      assert.equal(read.headers.get('etag'), newTag);
    } finally {
      await pair.resumeReplay();
    }
  });

  it("serves another customer's reads from the standby (its statistics count them)", async () => {
    const reader = await account('customer');
    await pair.caughtUp();
    const before = await standbyReads();
    for (let i = 0; i < 5; i++) {
      assert.equal((await call('/v1/orders', { headers: reader.auth })).status, 200);
      assert.equal((await call('/v1/orders/1', { headers: reader.auth })).status, 404);
    }
    // The standby's statistics are flushed within a second of a read.
    for (const deadline = Date.now() + 5_000; (await standbyReads()) < before + 10; ) {
      if (Date.now() > deadline) assert.fail(`the standby counted ${(await standbyReads()) - before} reads of 10`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });

  it('lets the primary answer while the standby lags past REPLICA_MAX_LAG, and uses it again after', async () => {
    const writer = await account('customer');
    const reader = await account('customer');
    const logged = logs.length;
    await pair.pauseReplay();
    try {
      const created = await call('/v1/orders', {
        method: 'POST',
        headers: { ...writer.auth, 'content-type': 'application/json' },
        body: '{"items":[{"productId":1,"qty":1}]}',
      });
      assert.equal(created.status, 201);
      await replicaState('lagging');
      const readyz = await call('/readyz');
      assert.equal(readyz.status, 200);
      const body = await readyz.json();
      assert.ok(body.replica.lagSeconds > 2, JSON.stringify(body));
      // The reader wrote nothing, but the standby lags: its list comes from the primary, complete.
      const all = await (await call('/v1/products?pageSize=1', { headers: reader.auth })).json();
      assert.ok(all.meta.total > 0);
      const metrics = await (await call('/metrics')).text();
      assert.match(metrics, /^orders_replica_in_use 0$/m);
      assert.ok(Number(/^orders_replica_lag_seconds (\S+)$/m.exec(metrics)?.[1]) > 2, metrics);
    } finally {
      await pair.resumeReplay();
    }
    await pair.caughtUp();
    await replicaState('in-use');
    const changes = logs.slice(logged).filter((l) => String(l.message).startsWith('read replica: '));
    assert.deepEqual(
      changes.map((l) => l.message),
      ['read replica: lagging, reads go to the primary', 'read replica: in use'],
    );
  });

  it('keeps reads working, each within 2 s, while the standby is stopped, and uses it again once back', async () => {
    const reader = await account('customer');
    await pair.stopStandby();
    try {
      for (let i = 0; i < 10; i++) {
        const started = performance.now();
        const response = await call('/v1/orders', { headers: reader.auth });
        assert.equal(response.status, 200);
        // 700 ms times TIME_SLACK (test/support/time.ts): not a read that waits out a connection time-out.
        assert.ok(performance.now() - started < slack(700), `a read took ${performance.now() - started} ms`);
      }
      await replicaState('unreachable');
      assert.equal((await call('/readyz')).status, 200);
    } finally {
      await pair.startStandby();
    }
    await replicaState('in-use');
  });
});
