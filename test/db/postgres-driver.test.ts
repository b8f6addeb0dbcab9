/**
 * The fixes to the `postgres` driver (patches/, one patch per fix, applied in
 * order by patch-package at npm ci), each provoked exactly: a connection that
 * closes under a transaction, and one that closes with a write still pending.
 * Without the fixes the first ends the process with an uncaught TypeError,
 * the second never reconnects.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import postgres from 'postgres';
import type { Sql } from '../../src/db/connection.ts';
import { serviceTransaction as reservedTransaction } from '../support/database.ts';
import { createTestDatabase, REAL_SERVER_URL, type TestDatabase } from '../support/database.ts';
import { proxyToDatabase, type DatabaseProxy, type TcpProxy } from '../support/proxy.ts';
import { slack } from '../support/time.ts';

let database: TestDatabase;
let link: DatabaseProxy;
let proxy: TcpProxy;
let url: string;

before(async () => {
  database = await createTestDatabase();
  link = await proxyToDatabase(database, 4);
  ({ proxy, url } = link);
});

after(async () => {
  await link.close();
  await database.drop();
});

const PATCHES = new URL('../../patches/', import.meta.url);
const DRIVER = new URL('../../node_modules/postgres/', import.meta.url);

/** A hunk of a patch: a file of the driver, its lines before the patch and after it (context lines included). */
type Hunk = { file: string; original: string; patched: string };

/** The hunks of a unified diff as git and patch-package write it, in order; text before the first file is ignored. */
function hunksOf(patch: string): Hunk[] {
  const lines = patch.split('\n');
  const hunks: Hunk[] = [];
  let file = '';
  for (let i = 0; i < lines.length; i++) {
    const diff = /^diff --git a\/node_modules\/postgres\/(\S+) /.exec(lines[i]!);
    if (diff) file = diff[1]!;
    const header = /^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@/.exec(lines[i]!);
    if (!header) continue;
    const original: string[] = [];
    const patched: string[] = [];
    const [originalLength, patchedLength] = [Number(header[1] ?? 1), Number(header[2] ?? 1)];
    while (original.length < originalLength || patched.length < patchedLength) {
      const line = lines[++i]!;
      if (line.startsWith('\\')) continue; // "\ No newline at end of file"
      if (line[0] !== '+') original.push(line.slice(1));
      if (line[0] !== '-') patched.push(line.slice(1));
    }
    hunks.push({ file, original: original.join('\n'), patched: patched.join('\n') });
  }
  return hunks;
}

/** Resolves when `fn` has been called; for awaiting a point in a callback. */
function signal(): { promise: Promise<void>; fire: () => void } {
  let fire = () => {};
  const promise = new Promise<void>((resolve) => {
    fire = resolve;
  });
  return { promise, fire };
}

describe('the patched postgres driver', { timeout: 20_000 }, () => {
  it('is patched: every patch of patches/ is in node_modules, in order, in src/ only (npm ci applies them)', () => {
    // The one other patch is the coverage report's (c8; scripts/bundle-tests.mjs says why).
    const patches = readdirSync(PATCHES)
      .filter((name) => name.endsWith('.patch') && !name.startsWith('c8+'))
      .sort();
    const version = (JSON.parse(readFileSync(new URL('package.json', DRIVER), 'utf8')) as { version: string }).version;
    assert.notEqual(patches.length, 0, 'patches/ holds the fixes');
    assert.deepEqual(
      patches.map((name) => name.split('+').slice(0, 2).join('@')),
      patches.map(() => `postgres@${version}`),
    );
    // Undone from the last patch to the first: each hunk's result must be in
    // the installed file exactly once, and gives way to what it replaced.
    const texts = new Map<string, string>();
    for (const name of patches.toReversed()) {
      const hunks = hunksOf(readFileSync(new URL(name, PATCHES), 'utf8'));
      // The service imports the driver as an ES module (its exports' "import": src/index.js), under tsx and in
      // esbuild's bundle alike: the CommonJS copy (cjs/) is never loaded, and stays as published.
      assert.deepEqual(
        hunks.filter((h) => !h.file.startsWith('src/')).map((h) => h.file),
        [],
        `${name} patches src/ only`,
      );
      for (const { file, original, patched } of hunks.toReversed()) {
        const text = texts.get(file) ?? readFileSync(new URL(file, DRIVER), 'utf8');
        const at = text.indexOf(patched);
        assert.ok(
          at !== -1 && text.indexOf(patched, at + 1) === -1,
          `${file} lacks ${name}, or has it twice:\n${patched}`,
        );
        texts.set(file, text.slice(0, at) + original + text.slice(at + patched.length));
      }
    }
  });

  it('a transaction whose connection closed fails its next statement (CONNECTION_CLOSED), never rerun', async () => {
    const sql = postgres(url, { max: 1, onnotice: () => {}, backoff: () => 0 });
    try {
      const inside = signal();
      const resume = signal();
      // The service's transaction (src/db/transaction.ts): its own begin and commit on a reserved connection.
      const transaction = reservedTransaction(sql as Sql, async (tx) => {
        await tx.unsafe('SELECT 1');
        inside.fire();
        await resume.promise;
        // The connection is gone: this must fail, not run elsewhere or resolve empty.
        return tx.unsafe('SELECT 42 AS answer');
      });
      const outcome = transaction.then(
        () => 'committed',
        (error: { code?: string }) => error.code,
      );
      await inside.promise;
      // Another query waits for the pool's only connection, so the pool
      // reconnects it at once for that query when it closes.
      const queued = sql`SELECT 2 AS two`;
      const queuedOutcome = queued.then(
        (rows) => rows[0]?.two,
        (error: { code?: string }) => error.code,
      );
      await proxy.down();
      await proxy.up();
      resume.fire();
      assert.equal(await outcome, 'CONNECTION_CLOSED');
      // The queued query runs on the new session (or fails cleanly with the cut).
      assert.ok([2, 'CONNECTION_CLOSED', 'ECONNRESET'].includes((await queuedOutcome) as number | string));
      assert.deepEqual([...(await sql`SELECT 3 AS three`)], [{ three: 3 }]);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it('a statement queued behind a busy transaction is settled when the connection closes', async () => {
    const sql = postgres(url, { max: 1, onnotice: () => {}, backoff: () => 0 });
    try {
      const inside = signal();
      const transaction = reservedTransaction(sql as Sql, async (tx) => {
        await tx.unsafe('SELECT 1');
        inside.fire();
        // Two at once: the second waits in the reserved connection's own queue.
        return Promise.all([tx.unsafe('SELECT pg_sleep(0.5)'), tx.unsafe('SELECT 2')]);
      });
      const outcome = transaction.then(
        () => 'committed',
        (error: { code?: string }) => error.code,
      );
      await inside.promise;
      await proxy.down();
      await proxy.up();
      assert.equal(await outcome, 'CONNECTION_CLOSED');
      assert.deepEqual([...(await sql`SELECT 3 AS three`)], [{ three: 3 }]);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  /** A pool of one connection through the proxy whose sockets the test can reach; `onWrite` may take a write over. */
  function pool(
    options: { stall_timeout?: number; onWrite?: (socket: Socket, index: number, chunk: Buffer) => boolean } = {},
  ) {
    const sockets: Socket[] = [];
    const sql = postgres(url, {
      max: 1,
      onnotice: () => {},
      backoff: () => 0,
      connect_timeout: 2,
      ...(options.stall_timeout === undefined ? {} : { stall_timeout: options.stall_timeout }),
      socket: () => {
        const socket = connect(proxy.port, '127.0.0.1');
        const index = sockets.push(socket) - 1;
        const write = socket.write.bind(socket) as (chunk: Buffer, ...rest: unknown[]) => boolean;
        socket.write = ((chunk: Buffer, ...rest: unknown[]) =>
          options.onWrite?.(socket, index, Buffer.from(chunk)) ? true : write(chunk, ...rest)) as typeof socket.write;
        return socket;
      },
    } as postgres.Options<Record<string, never>>);
    return { sql, sockets };
  }

  it('a connection closed with a write still pending reconnects and runs the next query', async () => {
    const { sql, sockets } = pool();
    try {
      assert.deepEqual([...(await sql`SELECT 1 AS one`)], [{ one: 1 }]);
      const query = sql`SELECT 2 AS two`;
      const lost = query.execute().then(
        () => 'ran',
        (error: { code?: string }) => error.code,
      );
      // The driver has written the query; its bytes wait for the next check phase.
      for (let i = 0; i < 100 && !(query as unknown as { state?: unknown }).state; i++) await null;
      assert.ok((query as unknown as { state?: unknown }).state, 'the query was handed to the connection');
      // The close reaches the driver before that phase, as when it lands in
      // the same poll phase as the data that made the driver write.
      const socket = sockets.at(-1)!;
      socket.destroy();
      socket.emit('close', false);
      assert.equal(await lost, 'CONNECTION_CLOSED');
      // Unpatched, the stale write timer holds back every later small write:
      // the next connection's start-up message is never sent (CONNECT_TIMEOUT),
      // and the pool reconnects for the waiting query until the stale chunk
      // passes 1,024 bytes and goes out, garbage ahead of a start-up message.
      assert.deepEqual([...(await sql`SELECT 3 AS three`)], [{ three: 3 }]);
      assert.equal(sockets.length, 2, 'the first reconnection ran the next query');
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  /** The FATAL error a server sends when it shuts down (SQLSTATE 57P01). */
  function shutdownMessage(): Buffer {
    const fields = [
      ['S', 'FATAL'],
      ['V', 'FATAL'],
      ['C', '57P01'],
      ['M', 'terminating connection due to administrator command'],
    ];
    const body = Buffer.concat([...fields.map(([k, v]) => Buffer.from(`${k}${v}\0`)), Buffer.from('\0')]);
    const head = Buffer.alloc(5);
    head.write('E');
    head.writeUInt32BE(body.length + 4, 1);
    return Buffer.concat([head, body]);
  }

  for (const [fault, cut] of [
    [
      'a reset',
      (socket: Socket) =>
        setImmediate(() => socket.destroy(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))),
    ],
    [
      'the server shutting down',
      (socket: Socket) =>
        setImmediate(() => {
          socket.emit('data', shutdownMessage());
          socket.destroy();
        }),
    ],
  ] as const) {
    it(`${fault} as a new connection loads its array types: the process survives, the next query runs`, async () => {
      const { sql } = pool({
        onWrite: (socket, index, chunk) => {
          if (index !== 0 || !chunk.includes('typcategory')) return false;
          cut(socket);
          return true;
        },
      });
      try {
        const first = await sql`SELECT 1 AS one`.then(
          (rows) => [...rows],
          (error: { code?: string }) => error.code,
        );
        // It fails with the cut, or the driver reconnects for it and it runs; never an unhandled rejection.
        assert.ok(
          ['ECONNRESET', '57P01', 'CONNECTION_CLOSED'].includes(first as string) ||
            JSON.stringify(first) === '[{"one":1}]',
          `the first query: ${JSON.stringify(first)}`,
        );
        assert.deepEqual([...(await sql`SELECT 2 AS two`)], [{ two: 2 }]);
      } finally {
        await sql.end({ timeout: 1 });
      }
    });
  }

  it('a reserved connection released after it closed is not handed back: the pool goes on', async () => {
    const { sql, sockets } = pool();
    try {
      const reserved = await sql.reserve();
      assert.deepEqual([...(await reserved`SELECT 1 AS one`)], [{ one: 1 }]);
      const closed = once(sockets.at(-1)!, 'close');
      sockets.at(-1)!.destroy();
      await closed;
      assert.equal(
        await reserved`SELECT 2`.then(
          () => 'ran',
          (error: { code?: string }) => error.code,
        ),
        'CONNECTION_CLOSED',
      );
      reserved.release();
      assert.deepEqual([...(await sql`SELECT 3 AS three`)], [{ three: 3 }]);
      assert.deepEqual([...(await sql`SELECT 4 AS four`)], [{ four: 4 }]);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it('stall_timeout drops a connection silent while an answer is due, even as more statements are sent', async () => {
    const { sql } = pool({ stall_timeout: 0.5 });
    try {
      assert.deepEqual([...(await sql`SELECT 1 AS one`)], [{ one: 1 }]);
      proxy.blackhole();
      const started = performance.now();
      const first = sql`SELECT 2`.then(
        () => 'ran',
        (error: { code?: string }) => error.code,
      );
      // Writes keep coming on that connection: they must not postpone the verdict.
      const more: Promise<unknown>[] = [];
      const sender = setInterval(() => more.push(sql`SELECT 3`.catch(() => {})), 100);
      const outcome = await first;
      clearInterval(sender);
      const took = performance.now() - started;
      assert.equal(outcome, 'CONNECTION_CLOSED');
      // The 500 ms timer, then at most 500 ms times TIME_SLACK (test/support/time.ts): not the writes' postponing.
      assert.ok(took >= 450 && took < 500 + slack(500), `dropped after the stall timeout, took ${Math.round(took)} ms`);
      await proxy.up();
      await Promise.all(more);
      assert.deepEqual([...(await sql`SELECT 4 AS four`)], [{ four: 4 }]);
    } finally {
      await proxy.up();
      await sql.end({ timeout: 1 });
    }
    // An idle connection is left alone, however long it stays idle.
    const idle = pool({ stall_timeout: 0.2 });
    try {
      assert.deepEqual([...(await idle.sql`SELECT 1 AS one`)], [{ one: 1 }]);
      await new Promise((resolve) => setTimeout(resolve, 600));
      assert.deepEqual([...(await idle.sql`SELECT 2 AS two`)], [{ two: 2 }]);
      assert.equal(idle.sockets.length, 1, 'the same connection served both');
    } finally {
      await idle.sql.end({ timeout: 1 });
    }
  });
});

describe('the pool queue (fix 6)', () => {
  it('searches only live slots: a queue rotated once per query for 100,000 queries stays small', async () => {
    // @ts-expect-error -- the driver's internal module has no type declarations
    const { default: Queue } = (await import('../../node_modules/postgres/src/queue.js')) as {
      default: (initial?: unknown[]) => {
        push(x: unknown): unknown;
        shift(): unknown;
        remove(x: unknown): unknown;
        length: number;
      };
    };
    const busy = Queue();
    const connections = Array.from({ length: 10 }, (_, id) => ({ id }));
    for (const c of connections) busy.push(c);
    // The pool under steady load: the busy queue hands a connection a query
    // (shift) and takes it back (push), and never drains.
    for (let query = 0; query < 100_000; query++) busy.push(busy.shift());
    // What remove() scans, measured by the array indexOf is called on.
    const scanned: number[] = [];
    const indexOf = Array.prototype.indexOf;
    Array.prototype.indexOf = function (this: unknown[], ...args: [unknown, number?]) {
      scanned.push(this.length - (args[1] ?? 0));
      return indexOf.apply(this, args);
    };
    try {
      assert.equal(busy.remove(connections[3]), connections[3]);
      assert.equal(busy.remove({ id: 'absent' }), null);
    } finally {
      Array.prototype.indexOf = indexOf;
    }
    assert.equal(busy.length, 9);
    assert.ok(
      scanned.length === 2 && scanned.every((n) => n <= 10),
      `remove() scanned ${scanned.join(', ')} slots (the driver unpatched: 100,010)`,
    );
    // And the queue still hands out every live connection once, in order.
    const order = Array.from({ length: 9 }, () => busy.shift());
    assert.deepEqual(
      order.map((c) => (c as { id: number }).id).sort((a, b) => a - b),
      [0, 1, 2, 4, 5, 6, 7, 8, 9],
    );
    assert.equal(busy.length, 0);
  });
});

describe('the prepared statement cache key (fix 7)', () => {
  it('reuses one prepared statement per text and parameter types, and tells types apart', async () => {
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      const text = 'SELECT $1::text AS v, count(*)::int AS n FROM pg_prepared_statements WHERE statement = $2';
      const runs: { v: string; n: number }[] = [];
      for (let i = 0; i < 3; i++)
        runs.push(...(await sql.unsafe<{ v: string; n: number }[]>(text, [`run ${i}`, text], { prepare: true })));
      assert.deepEqual(
        runs.map((r) => r.v),
        ['run 0', 'run 1', 'run 2'],
      );
      // Prepared on the first run, then reused: one statement on the server.
      assert.deepEqual(
        runs.map((r) => r.n),
        [1, 1, 1],
      );
      // The same text with parameters of another type is another statement.
      const [other] = await sql.unsafe<{ v: string; n: number }[]>(text, [sql.typed(1, 23), text], { prepare: true });
      assert.equal(other!.v, '1');
      assert.equal(other!.n, 2);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it('costs a run of a long prepared statement about what a short one costs: its key is not built anew', async (t) => {
    // The embedded database runs in this process: its own CPU would count, so the ratio says nothing there.
    if (!database.real) return t.skip('needs a server of its own (DATABASE_URL)');
    // Unpatched, each run concatenates the types and the text into a new key, which the cache lookup flattens and
    // hashes whole: a 16 MB text costs ~3 ms of CPU a run against ~0.4 ms patched. Measured in CPU time, against
    // a short statement in the same test: a ratio, so the machine's speed and load cancel out.
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    const runs = 20;
    const cpuPerRun = async (text: string) => {
      await sql.unsafe(text, [0], { prepare: true });
      const start = process.cpuUsage();
      for (let i = 1; i <= runs; i++) await sql.unsafe(text, [i], { prepare: true });
      const used = process.cpuUsage(start);
      return (used.user + used.system) / runs;
    };
    try {
      const short = await cpuPerRun('SELECT $1::int AS n');
      const long = await cpuPerRun(`SELECT $1::int AS n -- ${'x'.repeat(16 * 1024 * 1024)}`);
      assert.ok(long < short * 12, `a run of the 16 MB statement took ${long} µs of CPU, the short one ${short} µs`);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
});

describe('a prepared statement the session lost (fix 8)', () => {
  it('is retried outside a transaction, and never inside one: it fails there with 26000, sent once', async () => {
    const sent: string[] = [];
    const text = 'SELECT $1::int AS n';
    const sql = postgres(url, {
      max: 1,
      onnotice: () => {},
      debug: (_connection: number, query: string) => void (query === text && sent.push(query)),
    });
    try {
      const run = (on: Pick<Sql, 'unsafe'>, n: number) => on.unsafe(text, [n], { prepare: true });
      // What a transaction-mode pooler does to a prepared statement: the next server session does not know it.
      const lose = () => sql.unsafe('DEALLOCATE ALL');
      await run(sql as Sql, 1);
      await lose();
      assert.deepEqual([...(await run(sql as Sql, 2))], [{ n: 2 }]);
      assert.equal(sent.length, 3, 'retried once, outside a transaction');
      sent.length = 0;
      const outcome = await reservedTransaction(sql as Sql, async (tx) => {
        await tx.unsafe('DEALLOCATE ALL');
        return run(tx, 3);
      }).then(
        () => 'committed',
        (error: { code?: string }) => error.code,
      );
      assert.equal(outcome, '26000');
      // Retried, it would only meet the aborted transaction (25P02): or, for a COMMIT, end it with ROLLBACK.
      assert.equal(sent.length, 1, 'sent once inside the transaction');
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
});

describe('cancellation (fix 13)', {
  skip: REAL_SERVER_URL === undefined ? 'needs a CancelRequest: a real server' : false,
}, () => {
  /** A pool of one connection through the proxy, whose cancels go there too; simple queries, so they pipeline. */
  const one = (options: Record<string, unknown> = {}) =>
    postgres(url, { max: 1, onnotice: () => {}, backoff: () => 0, connect_timeout: 2, ...options });
  /** Patch 013's cancel(): its promise (the driver's types say void). */
  const cancelOf = (query: unknown) => (query as { cancel(): Promise<string> }).cancel();
  /** What `query` settles with: its rows, or its error's code. */
  const outcome = (query: Promise<unknown>) =>
    query.then(
      (rows) => [...(rows as Record<string, unknown>[])],
      (error: { code?: string }) => error.code,
    );

  it('a statement cancelled while written behind another keeps its place: each answer reaches its own', async () => {
    const sql = one();
    try {
      await sql.unsafe('SELECT 1');
      const busy = outcome(sql.unsafe('SELECT pg_sleep(0.3), 0 AS z').execute());
      const a = sql.unsafe('SELECT 1 AS a').execute();
      const b = sql.unsafe('SELECT 2 AS b').execute();
      const answers = [outcome(a), outcome(b)];
      await new Promise((resolve) => setTimeout(resolve, 50));
      // Another's statement is written behind it: no CancelRequest could be aimed at it alone. It runs.
      assert.equal(await cancelOf(a), 'left');
      assert.deepEqual(await busy, [{ pg_sleep: '', z: 0 }]);
      assert.deepEqual(await Promise.all(answers), [[{ a: 1 }], [{ b: 2 }]]);
      assert.deepEqual(await outcome(sql.unsafe('SELECT 3 AS c')), [{ c: 3 }]);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it('a statement cancelled while written behind another is cancelled once it runs, alone', async () => {
    const sql = one();
    try {
      await sql.unsafe('SELECT 1');
      const busy = outcome(sql.unsafe('SELECT pg_sleep(0.2), 0 AS z').execute());
      const slow = sql.unsafe('SELECT pg_sleep(5), 1 AS slow').execute();
      const answer = outcome(slow);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const started = performance.now();
      assert.equal(await cancelOf(slow), 'cancelled');
      assert.deepEqual([await busy, await answer], [[{ pg_sleep: '', z: 0 }], '57014']);
      assert.ok(performance.now() - started < 2_000, 'cancelled as soon as it ran, not after its 5 s');
      assert.deepEqual(await outcome(sql.unsafe('SELECT 3 AS c')), [{ c: 3 }]);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it('a late CancelRequest never reaches the next statement: nothing is written until it was handled', async () => {
    const sql = one();
    try {
      await sql.unsafe('SELECT 1');
      const seen: unknown[] = [];
      // A statement that ends about when its cancel lands, then another's at once: 60 times, at varied moments.
      for (let i = 0; i < 60; i++) {
        const s = sql.unsafe(`SELECT pg_sleep(${(i % 6) / 1000}), ${i} AS i`).execute();
        const settled = outcome(s);
        if (i % 3 === 1) await new Promise((resolve) => setImmediate(resolve));
        const cancelled = cancelOf(s);
        // It sleeps 10 ms: a cancel's signal that reached the backend while it ran would end it.
        const next = outcome(sql.unsafe(`SELECT pg_sleep(0.01), ${i} AS next`));
        seen.push(await next);
        await Promise.all([settled, cancelled]);
      }
      assert.deepEqual(
        seen,
        Array.from({ length: 60 }, (_, i) => [{ pg_sleep: '', next: i }]),
      );
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it('a running statement with another written behind it is left to finish; both get their answers', async () => {
    const sql = one();
    try {
      await sql.unsafe('SELECT 1');
      const running = sql.unsafe('SELECT pg_sleep(0.2), 1 AS first').execute();
      const behind = sql.unsafe('SELECT 2 AS second').execute();
      const answers = [outcome(running), outcome(behind)];
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(await cancelOf(running), 'left');
      assert.deepEqual(await Promise.all(answers), [[{ pg_sleep: '', first: 1 }], [{ second: 2 }]]);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it('on a reserved connection, the ROLLBACK after a cancel waits for it; the transaction ends', async () => {
    const sql = one();
    try {
      const reserved = await sql.reserve();
      await reserved.unsafe('BEGIN');
      const running = reserved.unsafe('SELECT pg_sleep(5)').execute();
      const answer = outcome(running);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const cancelled = cancelOf(running);
      const rolledBack = reserved.unsafe('ROLLBACK');
      assert.deepEqual([await cancelled, await answer, (await rolledBack).command], ['cancelled', '57014', 'ROLLBACK']);
      reserved.release();
      assert.deepEqual(await outcome(sql.unsafe('SELECT txid_current_if_assigned() AS xid')), [{ xid: null }]);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it('a CancelRequest never handled closes the connection (it could land later); the pool reconnects', async () => {
    const sql = one({ connect_timeout: 1 });
    try {
      await sql.unsafe('SELECT 1');
      const running = sql.unsafe('SELECT pg_sleep(3)').execute();
      const answer = outcome(running);
      await new Promise((resolve) => setTimeout(resolve, 50));
      proxy.blackhole();
      const cancel = await cancelOf(running).then(
        () => 'handled',
        (error: { code?: string }) => error.code,
      );
      assert.deepEqual([cancel, await answer], ['CANCEL_TIMEOUT', 'CONNECTION_CLOSED']);
      await proxy.up();
      assert.deepEqual(await outcome(sql.unsafe('SELECT 4 AS four')), [{ four: 4 }]);
    } finally {
      await proxy.up();
      await sql.end({ timeout: 1 });
    }
  });

  it('with cancel_requests: false, nothing is sent: the statement runs to its end', async () => {
    const sql = one({ cancel_requests: false });
    try {
      await sql.unsafe('SELECT 1');
      const running = sql.unsafe('SELECT pg_sleep(0.1), 1 AS done').execute();
      const answer = outcome(running);
      await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(await cancelOf(running), 'left');
      assert.deepEqual(await answer, [{ pg_sleep: '', done: 1 }]);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it('a statement not yet written is dropped: it never runs', async () => {
    const sql = one();
    try {
      await sql.unsafe('SELECT 1');
      const busy = outcome(sql.unsafe('SELECT pg_sleep(0.1)').execute());
      await new Promise((resolve) => setTimeout(resolve, 20));
      // The reserve waits for the connection: the statement after it is queued in the pool, not written.
      const reserved = sql.reserve();
      const queued = sql.unsafe('SELECT 5 AS never');
      const answer = outcome(queued);
      assert.equal(await cancelOf(queued), 'dropped');
      assert.equal(await answer, '57014');
      await busy;
      (await reserved).release();
      assert.deepEqual(await outcome(sql.unsafe('SELECT 6 AS six')), [{ six: 6 }]);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
});

describe('a statement dropped while its connection opens (fix 13)', { timeout: 20_000 }, () => {
  it('leaves the connection to the pool: the next statement runs on it', async () => {
    const sql = postgres(url, { max: 1, onnotice: () => {}, backoff: () => 0, connect_timeout: 2 });
    try {
      // The login waits in the paused proxy; the first statement is the connection's, not yet written.
      proxy.pause();
      const first = sql.unsafe('SELECT 1 AS never');
      const answer = first.then(
        () => 'ran',
        (error: { code?: string }) => error.code,
      );
      const accepted = proxy.accepted;
      first.execute();
      while (proxy.accepted === accepted) await new Promise((resolve) => setImmediate(resolve));
      assert.equal(await (first as unknown as { cancel(): Promise<string> }).cancel(), 'dropped');
      assert.equal(await answer, '57014');
      proxy.resume();
      // Unpatched, the login's ReadyForQuery passed the dropped statement over and the connection stayed in the
      // pool's connecting queue for good: this waited until the test's time-out (20 s).
      assert.deepEqual([...(await sql.unsafe('SELECT 2 AS two'))], [{ two: 2 }]);
    } finally {
      proxy.resume();
      await sql.end({ timeout: 1 });
    }
  });
});

describe('a statement that fails among its rows (fix 13)', () => {
  it('leaves the next statement on its connection its own rows, from the first', async () => {
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      // Three rows, then a division by zero: the failure comes after rows were handed over. The next statement is
      // written behind it on the same connection.
      const failing = sql.unsafe('SELECT i, 1 / (4 - i) AS boom FROM generate_series(1, 10) AS i').then(
        () => 'ran',
        (error: { code?: string }) => error.code,
      );
      const next = sql.unsafe('SELECT x FROM generate_series(1, 2) AS x');
      assert.equal(await failing, '22012');
      const rows = await next;
      assert.deepEqual([rows.length, [...rows]], [2, [{ x: 1 }, { x: 2 }]]);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
});
