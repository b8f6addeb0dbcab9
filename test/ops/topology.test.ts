/**
 * The deployed topology across hosts (contract §17; docs/operations.md,
 * "Across hosts"), built in network namespaces (test/support/topology.ts):
 * clients → the service HAProxy → two service hosts, each with its PgBouncer
 * → the database HAProxy → Patroni's two PostgreSQL nodes with etcd. Under
 * keyed write load through the service HAProxy (each order retried with its
 * key after a 503 or a lost connection), one fault after another, each a
 * link set down (a partition) or a process killed:
 *
 * 1. a service host cut from its database: the balancer takes it out (its
 *    `GET /readyz` fails), the other host serves, and it comes back once healed;
 * 2. the primary cut past Patroni's `ttl`: the standby takes over, the database
 *    HAProxy routes to it;
 * 3. the old primary's link healed: it rejoins as the synchronous standby while
 *    commits go on;
 * 4. a service host killed: the balancer takes it out.
 *
 * Asserted: every order acknowledged is stored, none twice, no 500; the
 * service back within bounds after each. The seconds each fault cost are
 * printed: docs/operations.md gives them.
 */
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { createToken } from '../../src/auth/token-store.ts';
import { seed } from '../../src/service/seed.ts';
import { createUser } from '../../src/users/store.ts';
import { NETNS_MISSING } from '../support/netns.ts';
import { startTopology, TOPOLOGY_MISSING, type Topology } from '../support/topology.ts';
import { until } from '../support/tools.ts';

const RATE = 30;
const CUSTOMERS = 8;

const skip =
  NETNS_MISSING ||
  TOPOLOGY_MISSING ||
  (process.env.ORDERS_TOPOLOGY_TEST === '1' ? false : 'runs in CI once (ORDERS_TOPOLOGY_TEST=1)');

let topology: Topology;
const customers: { id: number; token: string; index: number }[] = [];

before(async () => {
  if (skip) return;
  topology = await startTopology();
  await seed(topology.db);
  for (let i = 0; i < CUSTOMERS; i++) {
    const user = await createUser(topology.db, { email: `hosts${i}@example.test`, name: `H ${i}`, role: 'customer' });
    const { token } = await createToken(topology.db, user.id, ['orders:write'], null);
    customers.push({ id: user.id, token, index: i });
  }
});
after(async () => {
  for (const agent of agents.values()) agent.destroy();
  if (!skip) await topology?.close();
});

interface Attempt {
  readonly sentAt: number;
  answeredAt: number;
  status: number;
  type?: string;
}

interface Op {
  readonly customer: { id: number; token: string; index: number };
  readonly key: string;
  readonly productId: number;
  readonly qty: number;
  readonly attempts: Attempt[];
  orderId?: number;
}

/** A keep-alive agent per client address. */
const agents = new Map<string, Agent>();

/** POST /v1/orders for `op`, from its customer's own client address. */
function post(op: Op): Promise<{ status: number; body: { id?: number; type?: string } }> {
  const from = topology.clients[op.customer.index % topology.clients.length] as string;
  const agent = agents.get(from) ?? agents.set(from, new Agent({ keepAlive: true })).get(from)!;
  const payload = JSON.stringify({ items: [{ productId: op.productId, qty: op.qty }] });
  return new Promise((resolve, reject) => {
    const sent = request(
      `${topology.base}/v1/orders`,
      {
        method: 'POST',
        agent,
        localAddress: from,
        timeout: 30_000,
        headers: {
          authorization: `Bearer ${op.customer.token}`,
          'content-type': 'application/json',
          'idempotency-key': op.key,
        },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text || '{}') }));
        response.on('error', reject);
      },
    );
    sent.on('timeout', () => sent.destroy(new Error('timed out')));
    sent.on('error', reject);
    sent.end(payload);
  });
}

/** Posts `op` until it is created (retried after a 503, a 409 of its own key, or a lost connection). */
async function run(op: Op, giveUpAt: number): Promise<void> {
  for (;;) {
    const a: Attempt = { sentAt: performance.now(), answeredAt: 0, status: 0 };
    op.attempts.push(a);
    try {
      const response = await post(op);
      a.status = response.status;
      if (response.body.type !== undefined) a.type = response.body.type;
      if (response.status === 201 && response.body.id !== undefined) op.orderId = response.body.id;
    } catch {
      a.status = -1;
    }
    a.answeredAt = performance.now();
    if (a.status === 201 || performance.now() > giveUpAt) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Keyed orders at RATE a second until `stop()`; `done()` waits for every one to end. */
function load() {
  const ops: Op[] = [];
  const running: Promise<void>[] = [];
  let stopped = false;
  const started = performance.now();
  const loop = (async () => {
    for (let i = 0; !stopped; i++) {
      const customer = customers[i % CUSTOMERS] as Op['customer'];
      const op: Op = {
        customer,
        key: `hosts-${i}`,
        productId: 1 + (i % 20),
        qty: 1 + Math.floor(i / 20),
        attempts: [],
      };
      ops.push(op);
      running.push(run(op, performance.now() + 120_000));
      await new Promise((resolve) =>
        setTimeout(resolve, Math.max(0, started + ((i + 1) * 1000) / RATE - performance.now())),
      );
    }
  })();
  return {
    ops,
    stop: () => {
      stopped = true;
    },
    done: async () => {
      await loop;
      await Promise.all(running);
    },
  };
}

/** What the answers between `from` and `to` were: 201s, 503s, the longest gap between two 201s, the slowest. */
function during(ops: readonly Op[], from: number, to: number) {
  const attempts = ops.flatMap((op) => op.attempts).filter((a) => a.sentAt >= from && a.sentAt < to);
  const created = attempts
    .filter((a) => a.status === 201)
    .map((a) => a.answeredAt)
    .sort((a, b) => a - b);
  let gap = created.length === 0 ? to - from : Math.max(created[0]! - from, to - created.at(-1)!);
  for (let i = 1; i < created.length; i++) gap = Math.max(gap, created[i]! - created[i - 1]!);
  const slowest = Math.max(0, ...attempts.map((a) => a.answeredAt - a.sentAt));
  const statuses = new Map<string, number>();
  const label = (a: Attempt) => (a.status === -1 ? 'no answer' : a.status === 0 ? 'still open' : String(a.status));
  for (const a of attempts) statuses.set(label(a), (statuses.get(label(a)) ?? 0) + 1);
  return {
    gap,
    slowest,
    summary:
      `${[...statuses].map(([s, n]) => `${s} ×${n}`).join(', ')}; longest without a 201 ` +
      `${(gap / 1000).toFixed(1)} s, slowest answer ${(slowest / 1000).toFixed(1)} s`,
  };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the topology across hosts, under keyed writes (contract §17)', { skip, timeout: 600_000 }, () => {
  it('routes around a sick host, fails over, takes the old primary back, loses nothing', {
    timeout: 400_000,
  }, async (t) => {
    const { hosts, back } = topology;
    const wait = (done: () => Promise<boolean>, what: string, ms = 60_000) =>
      until(done, () => `${what}:\n${topology.why()}`, ms);
    const writes = load();
    const report: string[] = [];
    try {
      await pause(3_000);

      // 1. A service host cut from its database for 8 s.
      let from = performance.now();
      hosts.svc1.cut(back);
      await wait(async () => !(await topology.routesService('svc1')), 'svc1 was never taken out');
      const out = performance.now() - from;
      await pause(Math.max(0, 8_000 - out));
      hosts.svc1.heal(back);
      await wait(() => topology.routesService('svc1'), 'svc1 never came back');
      const cut = during(writes.ops, from, performance.now());
      report.push(
        `svc1 cut from its database 8 s: out of the balancer after ${(out / 1000).toFixed(1)} s, back ` +
          `${((performance.now() - from - 8_000) / 1000).toFixed(1)} s after the heal; ${cut.summary}`,
      );

      // 2. The primary cut from every other host past Patroni's ttl (10 s): db2 takes over.
      from = performance.now();
      hosts.db1.cut(back);
      await wait(() => topology.routesDatabase('db2'), 'the database HAProxy never routed to db2', 90_000);
      const routed = performance.now() - from;
      await pause(5_000);
      const failover = during(writes.ops, from, performance.now());
      report.push(`primary db1 cut: db2 routed after ${(routed / 1000).toFixed(1)} s; ${failover.summary}`);

      // 3. The old primary's link healed: it rejoins as the synchronous standby while the writes go on.
      from = performance.now();
      hosts.db1.heal(back);
      await wait(async () => (await topology.rest('db1', '/sync')) === 200, 'db1 never rejoined', 180_000);
      const rejoined = performance.now() - from;
      await pause(5_000);
      const rejoin = during(writes.ops, from, performance.now());
      report.push(`db1 healed: the synchronous standby after ${(rejoined / 1000).toFixed(1)} s; ${rejoin.summary}`);

      // 4. A service host killed.
      from = performance.now();
      topology.kill('svc2');
      await wait(async () => !(await topology.routesService('svc2')), 'svc2 was never taken out');
      const gone = performance.now() - from;
      await pause(5_000);
      const killed = during(writes.ops, from, performance.now());
      report.push(`svc2 killed: out of the balancer after ${(gone / 1000).toFixed(1)} s; ${killed.summary}`);

      writes.stop();
      await writes.done();
      for (const line of report) t.diagnostic(line);

      // Nothing lost, nothing twice, no 500.
      const attempts = writes.ops.flatMap((op) => op.attempts);
      assert.deepEqual(
        attempts.filter((a) => a.status === 500).map((a) => a.type),
        [],
        'no 500',
      );
      const unfinished = writes.ops.filter((op) => op.orderId === undefined).map((op) => op.key);
      assert.deepEqual(unfinished, [], 'every order ended created');
      const ids = writes.ops.map((op) => op.orderId as number);
      const stored = await topology.db.sql.unsafe(
        `SELECT o.id, count(*) OVER (PARTITION BY o.customer_id, i.product_id, i.qty) AS copies
         FROM orders o JOIN order_items i ON i.order_id = o.id WHERE o.customer_id = ANY($1::bigint[])`,
        [customers.map((c) => String(c.id))],
      );
      const found = new Set(stored.map((r) => Number(r.id)));
      assert.deepEqual(
        ids.filter((id) => !found.has(id)),
        [],
        'acknowledged orders lost',
      );
      assert.deepEqual(
        stored.filter((r) => Number(r.copies) > 1).map((r) => Number(r.id)),
        [],
        'orders done twice',
      );
      assert.equal(stored.length, writes.ops.length, 'one order per key, none other');

      // Back within bounds: the failover within Patroni's ttl and the checks; the others, the balancer's checks.
      assert.ok(cut.gap < 5_000, `svc1 cut: ${cut.summary}`);
      assert.ok(failover.gap < 25_000, `failover: ${failover.summary}`);
      assert.ok(rejoin.gap < 5_000, `rejoin: ${rejoin.summary}`);
      assert.ok(killed.gap < 5_000, `svc2 killed: ${killed.summary}`);
    } finally {
      writes.stop();
    }
  });
});
