/**
 * Webhook receivers that misbehave (issue 11, item 3; contract §15): every
 * attempt ends by its time-out whatever the receiver does; a 2xx answer is a
 * delivery as soon as its head arrives, whatever its body does (Standard
 * Webhooks counts any 2xx as success), while another status's body is read
 * up to 64 KiB within the deadline; and a slow receiver never holds up a
 * healthy one: it has one attempt in flight at a time however many
 * deliveries it has due. Full garbage collections run all the while: a
 * time-out kept alive only by `AbortSignal.any()` is collected and never
 * fires (nodejs/node#57736), which only shows once one has run.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { after, before, describe, it, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { WorkerOptions } from '../../src/webhooks/worker.ts';
import { bearer, startTestServer, type Account, type TestServer } from '../support/server.ts';
import { slack } from '../support/time.ts';

setFlagsFromString('--expose-gc');
/** A full, synchronous garbage collection. */
const gc = runInNewContext('gc') as () => void;

/**
 * The attempt's time-out (the production setting made small): 800 ms times TIME_SLACK. Whether a receiver's head
 * comes before it decides the recorded status, so it must stay far above what a busy machine takes to pass a head
 * between two of its own sockets (with 800 ms flat, a head came late on a loaded 2-core machine: the attempt was
 * recorded with no status).
 */
const TIMEOUT_MS = slack(800);
/** How late past its time-out an attempt may end on a busy machine. */
const SLACK_MS = slack(600);
/**
 * How early before its time-out an attempt ended by it may appear to end: a
 * timer counts from the event loop's cached clock, which lags while a tick
 * runs (a full collection, say), so it can fire a little before
 * `performance.now()` says it is due.
 */
const EARLY_MS = 50;
/**
 * The longest a 2xx attempt may take, though its body stalls or streams for
 * ever: settled by the answer's head, clearly before its time-out (which is
 * when an attempt waiting for the body would end). Not half of it: on a
 * loaded 2-core machine an attempt settled at the head was seen at 487 ms.
 */
const AT_ONCE_MS = TIMEOUT_MS * 0.8;
/** How long a connection the worker dropped may take to be seen closed by the receiver. */
const CLOSED_WITHIN_MS = 2_000;
/** No retries: each delivery gets one attempt, and its outcome is final. */
const WORKER: Omit<WorkerOptions, 'allowPrivate'> = {
  pollMs: 20,
  leaseSeconds: 30,
  retryDelaysSeconds: [],
  timeoutMs: TIMEOUT_MS,
  concurrency: 8,
};
/** The patient server's polls: the production default, far longer than an attempt to a healthy receiver. */
const PATIENT_POLL_MS = 1_000;
/**
 * A server whose attempts only its shutdown ends within a test, to watch
 * attempts held open, with few slots: a hung endpoint could fill them all.
 */
const PATIENT_WORKER = {
  ...WORKER,
  observe: (claim: (typeof patientClaims)[number]) => patientClaims.push(claim),
  pollMs: PATIENT_POLL_MS,
  // Longer than the time-out, as the worker requires: the hung endpoint stays leased until the shutdown.
  leaseSeconds: 120,
  retryDelaysSeconds: [60],
  timeoutMs: 60_000,
  concurrency: 3,
};
/** Deliveries due at once to the hung receiver: twice the patient server's slots. */
const HUNG_DUE = 2 * PATIENT_WORKER.concurrency;
/** Deliveries to the healthy receiver: the first held open by the test, then the rest queued behind it. */
const HEALTHY_DUE = 5;
/** What the patient worker claimed, and what started each claim (its `observe` option). */
const patientClaims: { trigger: 'poll' | 'freed'; deliveries: readonly number[] }[] = [];

interface Service {
  readonly t: TestServer;
  send(method: string, path: string, body?: unknown): Promise<Response>;
  /** Writes one `user.created` event (and a delivery to every endpoint subscribed to it). */
  createUser(): Promise<void>;
  /** Writes one `order.created` event. */
  createOrder(): Promise<void>;
  /** A new endpoint's id. */
  endpoint(url: string, events: string[]): Promise<number>;
  deliveries(endpointId: number): Promise<Delivery[]>;
}

interface Attempt {
  status: number | null;
  error: string | null;
  durationMs: number;
}
/** A row ClaimDeliveries gives (its fields this test reads). */
interface Claimed {
  id: number;
  endpoint_id: number;
}
interface Delivery {
  id: number;
  status: string;
  attempts: number;
  attemptLog: Attempt[];
}

async function startService(worker: Omit<WorkerOptions, 'allowPrivate'>): Promise<Service> {
  const t = await startTestServer({ WEBHOOK_ALLOW_PRIVATE: '1' }, undefined, undefined, worker);
  const admin: Account = await t.user('admin');
  let users = 0;
  const send = (method: string, path: string, body?: unknown) =>
    t.fetch(path, {
      method,
      headers: { ...bearer(admin.token), 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  return {
    t,
    send,
    async createUser() {
      users += 1;
      assert.equal(
        (await send('POST', '/v1/users', { email: `faults${users}.${process.pid}@example.test`, name: 'Faults' }))
          .status,
        201,
      );
    },
    async createOrder() {
      assert.equal(
        (await send('POST', '/v1/orders', { customerId: admin.id, items: [{ productId: 1, qty: 1 }] })).status,
        201,
      );
    },
    async endpoint(url, events) {
      const response = await send('POST', '/v2/webhook-endpoints', { url, events });
      assert.equal(response.status, 201);
      return (await response.json()).id;
    },
    async deliveries(endpointId) {
      return (await (await send('GET', `/v2/webhook-endpoints/${endpointId}/deliveries?sort=id`)).json()).data;
    },
  };
}

let fast: Service;
let patient: Service;
let collections: NodeJS.Timeout;
/** Listener-leak warnings: each attempt in flight listens for the shutdown, and that must not warn. */
const warnings: string[] = [];
process.on('warning', (warning) => {
  if (warning.name === 'MaxListenersExceededWarning') warnings.push(warning.message);
});

before(async () => {
  [fast, patient] = await Promise.all([startService(WORKER), startService(PATIENT_WORKER)]);
  // Full collections every 100 ms, far more often than any time-out here.
  collections = setInterval(gc, 100);
});
after(async () => {
  clearInterval(collections);
  await Promise.all([fast.t.close(), patient.t.close()]);
  assert.deepEqual(warnings, []);
});

/** Polls `probe` until it gives a value, and fails once `limitMs` have passed. */
async function until<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  limitMs: number,
): Promise<T> {
  const start = performance.now();
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    // A deadline to give up waiting, times TIME_SLACK (test/support/time.ts); what never happens still fails.
    if (performance.now() - start > slack(limitMs)) assert.fail(`${what}: not within ${slack(limitMs)} ms`);
    await sleep(10);
  }
}

/** The endpoint's only delivery on the fast server, once its attempt has been recorded. */
const recorded = (endpointId: number) =>
  until(
    `the attempt to endpoint ${endpointId} recorded`,
    async () => {
      const [delivery] = await fast.deliveries(endpointId);
      return delivery !== undefined && delivery.attemptLog.length > 0 ? delivery : undefined;
    },
    TIMEOUT_MS + 5_000,
  );

interface FakeReceiver {
  readonly url: string;
  /** Requests received, in order. */
  readonly requests: IncomingMessage[];
  /** Connections the worker opened and has not closed yet. */
  readonly open: Set<Socket>;
  close(): Promise<void>;
}

/** A receiver on loopback that does `behave` with each request (after reading its body). */
async function startFakeReceiver(behave: (res: ServerResponse, url: string) => void): Promise<FakeReceiver> {
  const requests: IncomingMessage[] = [];
  const open = new Set<Socket>();
  const server = createServer((req, res) => {
    requests.push(req);
    req.resume();
    req.on('end', () => behave(res, url));
  });
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return {
    url,
    requests,
    open,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Writes `chunk` every `everyMs` until the connection closes. */
function trickle(res: ServerResponse, chunk: string, everyMs: number): void {
  const timer = setInterval(() => res.write(chunk), everyMs);
  res.on('close', () => clearInterval(timer));
}

/** Writes as fast as the connection takes it until it closes. */
function flood(res: ServerResponse): void {
  const chunk = 'x'.repeat(16 * 1024);
  const more = () => {
    while (!res.destroyed && res.write(chunk));
  };
  res.on('drain', more);
  more();
}

const attemptLines = (deliveryId: number) =>
  fast.t.logs
    .filter((line) => line.message === 'webhook attempt' && line.delivery === deliveryId)
    .map(({ level, status, outcome, error }) => ({ level, status, outcome, error }));

describe('a webhook receiver that never answers', () => {
  it('has its attempt ended and recorded as failed by the time-out, amid full garbage collections', async () => {
    const receiver = await startFakeReceiver(() => {});
    const id = await fast.endpoint(receiver.url, ['user.created']);
    try {
      await fast.createUser();
      await until('the receiver getting the request', () => receiver.requests[0], 5_000);
      const delivery = await recorded(id);
      assert.deepEqual({ status: delivery.status, attempts: delivery.attempts }, { status: 'failed', attempts: 1 });
      assert.deepEqual(
        delivery.attemptLog.map(({ status, error }) => ({ status, error })),
        [{ status: null, error: `no answer within ${TIMEOUT_MS} ms` }],
      );
      const duration = delivery.attemptLog[0]!.durationMs;
      assert.ok(duration >= TIMEOUT_MS - EARLY_MS && duration < TIMEOUT_MS + SLACK_MS, `ended after ${duration} ms`);
      // The worker closed its connection: the attempt is over, not only recorded.
      await until('the connection closed', () => (receiver.open.size === 0 ? true : undefined), CLOSED_WITHIN_MS);
      assert.equal(receiver.requests.length, 1);
      assert.deepEqual(attemptLines(delivery.id), [
        { level: 'warn', status: null, outcome: 'failed', error: `no answer within ${TIMEOUT_MS} ms` },
      ]);
    } finally {
      await fast.send('DELETE', `/v2/webhook-endpoints/${id}`);
      await receiver.close();
    }
  });
});

interface HostileCase {
  readonly name: string;
  readonly behave: (res: ServerResponse, url: string) => void;
  readonly expected: Pick<Attempt, 'status' | 'error'>;
  /** Ended by the time-out, else sooner. */
  readonly byTimeout: boolean;
}

/**
 * Gives each case its own endpoint, all for one `order.created` event, so
 * they run at once, and checks each outcome: one request (no redirect
 * followed), the attempt recorded and logged, and, when the worker cut the
 * answer short, the connection closed rather than kept for reuse.
 */
async function deliverToEach(
  cases: readonly HostileCase[],
  outcome: 'delivered' | 'failed',
  ctx: TestContext,
): Promise<void> {
  const receivers = await Promise.all(cases.map((c) => startFakeReceiver(c.behave)));
  const ids: number[] = [];
  try {
    for (const receiver of receivers) ids.push(await fast.endpoint(receiver.url, ['order.created']));
    await fast.createOrder();
    const outcomes = await Promise.all(ids.map((id) => recorded(id)));
    ctx.diagnostic(
      `attempts ended after ${outcomes
        .map((delivery, i) => `${delivery.attemptLog[0]?.durationMs} ms (${cases[i]!.name})`)
        .join(', ')}`,
    );
    for (const [i, c] of cases.entries()) {
      const delivery = outcomes[i]!;
      assert.deepEqual(
        { status: delivery.status, attempts: delivery.attempts },
        { status: outcome, attempts: 1 },
        c.name,
      );
      assert.deepEqual(
        delivery.attemptLog.map(({ status, error }) => ({ status, error })),
        [c.expected],
        c.name,
      );
      const duration = delivery.attemptLog[0]!.durationMs;
      if (outcome === 'delivered')
        assert.ok(duration < AT_ONCE_MS, `${c.name}: ended after ${duration} ms, not at once`);
      else if (c.byTimeout)
        assert.ok(
          duration >= TIMEOUT_MS - EARLY_MS && duration < TIMEOUT_MS + SLACK_MS,
          `${c.name}: ended after ${duration} ms`,
        );
      else assert.ok(duration < TIMEOUT_MS, `${c.name}: ended after ${duration} ms`);
      assert.equal(receivers[i]!.requests.length, 1, `${c.name}: one request, no redirect followed`);
      assert.deepEqual(
        attemptLines(delivery.id),
        [
          {
            level: outcome === 'delivered' ? 'info' : 'warn',
            status: c.expected.status,
            outcome,
            error: c.expected.error ?? undefined,
          },
        ],
        c.name,
      );
      // An answer cut off (a 2xx's body, or another cut by the deadline or the cap) is cut
      // off for good: the connection is closed, not kept for reuse.
      if (outcome === 'delivered' || c.expected.error !== null) {
        await until(
          `${c.name}: the connection closed`,
          () => (receivers[i]!.open.size === 0 ? true : undefined),
          CLOSED_WITHIN_MS,
        );
      }
    }
  } finally {
    for (const id of ids) await fast.send('DELETE', `/v2/webhook-endpoints/${id}`);
    await Promise.all(receivers.map((r) => r.close()));
  }
}

describe('a webhook receiver that answers 2xx, then misbehaves with the body', () => {
  const delivered = { status: 200, error: null };
  const cases: HostileCase[] = [
    {
      name: '200, then stalls mid-body',
      behave: (res) => {
        res.writeHead(200, { 'content-length': '100' });
        res.write('x'.repeat(10));
      },
      expected: delivered,
      byTimeout: false,
    },
    {
      name: '200, then streams a body for ever, slowly',
      behave: (res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        trickle(res, 'x', 20);
      },
      expected: delivered,
      byTimeout: false,
    },
    {
      name: '200, then streams a body for ever, fast',
      behave: (res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        flood(res);
      },
      expected: delivered,
      byTimeout: false,
    },
    {
      name: '200 with a complete body of 100 KiB',
      behave: (res) => {
        res
          .writeHead(200, { 'content-type': 'text/plain', 'content-length': String(100 * 1024) })
          .end('x'.repeat(100 * 1024));
      },
      expected: delivered,
      byTimeout: false,
    },
  ];

  it('records each attempt delivered (status, no error) at the head, well before time-out; hangs up', async (ctx) => {
    await deliverToEach(cases, 'delivered', ctx);
  });
});

describe('a webhook receiver that answers another status in a hostile way', () => {
  const unfinished = `the answer did not finish within ${TIMEOUT_MS} ms`;
  const cases: HostileCase[] = [
    {
      name: '503, then stalls mid-body',
      behave: (res) => {
        res.writeHead(503, { 'content-length': '100' });
        res.write('x'.repeat(10));
      },
      expected: { status: 503, error: unfinished },
      byTimeout: true,
    },
    {
      name: '500, then streams a body for ever, slowly',
      behave: (res) => {
        res.writeHead(500, { 'content-type': 'text/plain' });
        trickle(res, 'x', 20);
      },
      expected: { status: 500, error: unfinished },
      byTimeout: true,
    },
    {
      name: '500, then streams a body for ever, fast',
      behave: (res) => {
        res.writeHead(500, { 'content-type': 'text/plain' });
        flood(res);
      },
      expected: { status: 500, error: 'the answer is longer than 65536 bytes; not read further' },
      byTimeout: false,
    },
    {
      name: 'redirects to itself and holds the redirect open',
      behave: (res, url) => {
        res.writeHead(307, { location: url, 'content-type': 'text/plain' });
        trickle(res, 'moved\n', 50);
      },
      expected: { status: 307, error: unfinished },
      byTimeout: true,
    },
    {
      name: 'redirects to itself, endlessly',
      behave: (res, url) => {
        res.writeHead(302, { location: `${url}?again` }).end();
      },
      expected: { status: 302, error: null },
      byTimeout: false,
    },
  ];

  it('ends each attempt by time-out or 64 KiB cap (or sooner), follows no redirect, records it failed', async (ctx) => {
    await deliverToEach(cases, 'failed', ctx);
  });
});

describe('a hung webhook receiver beside a healthy one', () => {
  /** Each delivery's status, attempt count and recorded attempts, straight from the database. */
  const states = async (endpointId: number) =>
    (
      await patient.t.server.db.sql<{ status: string; attempts: number; recorded: number }[]>`
      SELECT d.status, d.attempts, (SELECT count(*)::int FROM webhook_attempts a WHERE a.delivery_id = d.id) AS recorded
      FROM webhook_deliveries d WHERE d.endpoint_id = ${endpointId} ORDER BY d.id`
    ).map((row) => ({ ...row }));

  /**
   * Watches the patient worker's claims (its polls, and its claims when an
   * attempt ends): each call of ClaimDeliveries, in the order they start,
   * with what it claimed once it has ended.
   */
  const watchClaims = () => {
    const claims: { claimed?: unknown[] }[] = [];
    const db = patient.t.server.db;
    const many = db.many.bind(db);
    db.many = (async (name: string, params?: readonly unknown[]) => {
      if (name !== 'ClaimDeliveries') return many(name as never, params as never);
      const claim: { claimed?: unknown[] } = {};
      claims.push(claim);
      claim.claimed = await many(name, params as never);
      return claim.claimed;
    }) as typeof db.many;
    return {
      /**
       * The claims started from now: resolves with what the first `count` of
       * them claimed once they have all ended, or sooner once one of them has
       * claimed something (a full worker might not claim again).
       */
      async next(count: number, limitMs: number): Promise<unknown[][]> {
        const from = claims.length;
        try {
          return await until(
            `${count} claims of the worker`,
            () => {
              const ended = claims
                .slice(from, from + count)
                .flatMap((claim) => (claim.claimed === undefined ? [] : [claim.claimed]));
              return ended.length === count || ended.some((claimed) => claimed.length > 0) ? ended : undefined;
            },
            limitMs,
          );
        } catch (error) {
          // A worker with every slot taken claims again only when an attempt ends: say what filled them.
          const taken = claims.map((claim) =>
            (claim.claimed ?? []).map(
              (delivery) => `${(delivery as Claimed).id} (endpoint ${(delivery as Claimed).endpoint_id})`,
            ),
          );
          throw new Error(
            `${(error as Error).message}; ` +
              `the deliveries each claim took since the test began: ${JSON.stringify(taken)}`,
          );
        }
      },
    };
  };

  it('gives a hung endpoint one attempt at a time, however many are due, the healthy one all at once', async (ctx) => {
    const hung = await startFakeReceiver(() => {});
    // The healthy receiver holds its answers until the test opens the gate, then answers 204.
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    let healthyOpen = 0;
    let healthyMostOpen = 0;
    const healthy = await startFakeReceiver((res) => {
      healthyMostOpen = Math.max(healthyMostOpen, ++healthyOpen);
      void gate.then(() => {
        healthyOpen -= 1;
        res.writeHead(204).end();
      });
    });
    // On the patient server: nothing but its shutdown ends the hung attempt during this test.
    const hungId = await patient.endpoint(hung.url, ['user.created']);
    const healthyId = await patient.endpoint(healthy.url, ['order.created']);
    try {
      const claims = watchClaims();
      for (let n = 0; n < HUNG_DUE; n++) await patient.createUser();
      await until('the hung receiver getting a request', () => hung.requests[0], 5_000);

      // With every slot but the hung one's free, the healthy endpoint is served at
      // the next poll (were the hung endpoint given every slot, not for 60 s).
      let started = performance.now();
      await patient.createOrder();
      await until('the first healthy delivery received', () => healthy.requests[0], 5_000);
      const firstMs = performance.now() - started;

      // Its other deliveries queue behind the one held open; polls go on with a slot
      // free, and neither endpoint gets a second attempt while its first runs: the
      // next two polls, made with all those deliveries due, claim nothing.
      for (let n = 1; n < HEALTHY_DUE; n++) await patient.createOrder();
      assert.deepEqual(await claims.next(2, 4 * PATIENT_POLL_MS + 5_000), [[], []]);
      assert.equal(hung.requests.length, 1);
      assert.equal(hung.open.size, 1);
      assert.equal(healthy.requests.length, 1);

      // The healthy receiver answers: each attempt's end claims the next at once, not at the next poll.
      started = performance.now();
      const claimedFrom = patientClaims.length;
      openGate();
      await until(
        'every healthy delivery recorded',
        async () => {
          const rows = await states(healthyId);
          return rows.length === HEALTHY_DUE && rows.every((row) => row.status === 'delivered') ? rows : undefined;
        },
        10_000,
      );
      const restMs = performance.now() - started;
      // What started the claims that took them: an attempt's end (at once), or the poll. A poll may, rarely, come
      // between an attempt's record and its end and take the next one first; waiting for polls, all would.
      const healthyIds = new Set((await patient.deliveries(healthyId)).map((delivery) => delivery.id));
      const triggers = patientClaims
        .slice(claimedFrom)
        .flatMap((claim) => claim.deliveries.filter((id) => healthyIds.has(id)).map(() => claim.trigger));
      ctx.diagnostic(
        `first healthy delivery ${Math.round(firstMs)} ms after its event, ` +
          `the other ${HEALTHY_DUE - 1} in ${Math.round(restMs)} ms (claims: ${triggers.join(', ')}), ` +
          `beside a hung attempt with ${HUNG_DUE - 1} more due`,
      );
      assert.equal(triggers.length, HEALTHY_DUE - 1, 'every queued healthy delivery claimed once');
      assert.ok(
        triggers.filter((trigger) => trigger === 'poll').length <= 1,
        `the queued deliveries were claimed at polls, not at once as each attempt ended: ${triggers.join(', ')}`,
      );
      assert.equal(healthyMostOpen, 1);
      assert.equal(healthy.requests.length, HEALTHY_DUE);
      const delivered = (await patient.deliveries(healthyId)).map(({ status, attempts, attemptLog }) => ({
        status,
        attempts,
        log: attemptLog.map(({ status, error }) => ({ status, error })),
      }));
      assert.deepEqual(
        delivered,
        Array(HEALTHY_DUE).fill({ status: 'delivered', attempts: 1, log: [{ status: 204, error: null }] }),
      );

      // The hung endpoint still has exactly one attempt open; the rest wait, unclaimed.
      assert.equal(hung.requests.length, 1);
      assert.equal(hung.open.size, 1);
      assert.deepEqual(await states(hungId), [
        { status: 'pending', attempts: 1, recorded: 0 },
        ...Array(HUNG_DUE - 1).fill({ status: 'pending', attempts: 0, recorded: 0 }),
      ]);
    } finally {
      openGate();
      await patient.send('DELETE', `/v2/webhook-endpoints/${healthyId}`);
      // Shutting down ends the hung attempt (stop() aborts attempts in flight).
      await patient.t.close();
      await until(
        'the hung connection closed by the shutdown',
        () => (hung.open.size === 0 ? true : undefined),
        CLOSED_WITHIN_MS,
      );
      await Promise.all([hung.close(), healthy.close()]);
    }
  });
});
