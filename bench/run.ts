/**
 * `make bench` (contract §14): seeds the benchmark data on the database of
 * DATABASE_URL (or the embedded one in ./data-bench, saying so), starts the
 * server with every feature on (auth, ETag, rate limiting with a high limit,
 * the request log written to bench/results/server.log), and drives each
 * scenario from a separate process (bench/load.mjs: wrk, or autocannon when
 * wrk is not installed) over loopback: a warm-up, then a fixed duration,
 * with the server's CPU time per request read from /proc around the
 * measured run. Two reference rows: the ceiling (bare node:http serving the
 * same bytes from memory) and the peer (bench/peers/fastify.mjs: Fastify and
 * the `postgres` driver serving the same query, no auth), which runs in
 * alternating rounds with scenario 1 on the same database. Prints a table
 * and writes bench/results/latest.json.
 *
 * Environment: BENCH_ORDERS (default 100000), BENCH_CONNECTIONS (32),
 * BENCH_SECONDS (10), BENCH_WARMUP_SECONDS (3), BENCH_ROUNDS (3, the least:
 * rounds of scenario 1 and the peer), BENCH_RATE_LIMIT (1000000/60), BENCH_LOAD
 * (`wrk` or `autocannon`; default wrk when on PATH), WORKERS (1),
 * DB_POOL_MAX (the service's default, 10, for the server and the peer), and
 * BENCH_SCENARIOS (e.g. `2,4`: only those of scenarios 2–5), BENCH_SEED_ONLY=1
 * to seed and stop (for bench/explain.ts), BENCH_PROFILE=1 to write the
 * server's CPU profile (`--cpu-prof`) to bench/results/profile/.
 * The server is the built program, dist/orders.mjs (`make bench` builds it).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { accessSync, closeSync, constants, mkdirSync, openSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { createToken } from '../src/auth/token-store.ts';
import { openDatabase, type Database } from '../src/db/database.ts';
import { migrate } from '../src/db/migrate.ts';
import { seed } from '../src/service/seed.ts';
import { parseStatements } from '../src/db/statements.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const ORDERS = env('BENCH_ORDERS', 100_000);
const CONNECTIONS = env('BENCH_CONNECTIONS', 32);
const SECONDS = env('BENCH_SECONDS', 10);
const WARMUP = env('BENCH_WARMUP_SECONDS', 3);
const WORKERS = env('WORKERS', 1);
// contract §14: at least three rounds each of scenario 1 and the peer.
const ROUNDS = Math.max(3, env('BENCH_ROUNDS', 3));
const RATE_LIMIT = process.env.BENCH_RATE_LIMIT ?? '1000000/60';
const RESULTS = `${ROOT}bench/results`;
const SERVER_LOG = `${RESULTS}/server.log`;
const databaseUrl = process.env.DATABASE_URL;
/**
 * BENCH_SCENARIOS=2,4: only those of scenarios 2–5 (scenario 1, the peer and the ceiling always run), to profile
 * one.
 */
const ONLY = process.env.BENCH_SCENARIOS?.split(',').map((n) => n.trim());
const wanted = (name: string) => ONLY === undefined || ONLY.includes(name.split('.')[0] as string);
const dataDir = `${ROOT}data-bench`;

const statements = new Map(
  parseStatements(readFileSync(`${ROOT}bench/seed.sql`, 'utf8'), 'bench/seed.sql').map((s) => [s.name, s.text]),
);
const run = (db: Database, name: string, params: (string | number)[] = []) =>
  db.sql.unsafe(statements.get(name) as string, params);
/** Seeding statements run for minutes at 1,000,000 orders: without the service's 5 s statement timeout. */
const runLong = (db: Database, names: string[], params: (string | number)[] = []) =>
  db.sql.begin(async (tx) => {
    await tx.unsafe('SET LOCAL statement_timeout = 0');
    for (const name of names) await tx.unsafe(statements.get(name) as string, name === 'SeedBenchOrders' ? params : []);
  });

interface Prepared {
  token: string;
  customerToken: string;
  customerId: number;
  orderIds: number[];
  busiest: number;
}

/** Creates the database DATABASE_URL names when the server does not have it yet. */
async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) return;
  target.pathname = '/postgres';
  const admin = await openDatabase({ databaseUrl: target.toString(), dataDir, poolMax: 1, stalledConnectionMs: 0 });
  try {
    const exists = await admin.sql`SELECT 1 FROM pg_database WHERE datname = ${name}`;
    if (exists.length === 0) {
      process.stderr.write(`bench: creating the database ${name}\n`);
      await admin.sql.unsafe(`CREATE DATABASE ${name}`);
    }
  } finally {
    await admin.close();
  }
}

async function prepare(): Promise<Prepared> {
  if (databaseUrl === undefined)
    process.stderr.write(
      `bench: DATABASE_URL is unset: using the embedded database in ${dataDir} (figures are not comparable to a ` +
        'real server)\n',
    );
  else await ensureDatabase(databaseUrl);
  // Seeding lifts the statement timeout: no watchdog on these connections.
  const db = await openDatabase({ databaseUrl, dataDir, poolMax: 4, stalledConnectionMs: 0 });
  try {
    await migrate(db);
    await seed(db);
    await run(db, 'SeedBenchUsers');
    const [{ n }] = (await run(db, 'CountBenchOrders')) as unknown as [{ n: number }];
    if (n < ORDERS) {
      process.stderr.write(`bench: seeding ${ORDERS - n} orders (have ${n})…\n`);
      const started = performance.now();
      for (let left = ORDERS - n; left > 0; left -= 100_000)
        await runLong(db, ['SeedBenchOrders'], [Math.min(left, 100_000)]);
      await runLong(db, ['PauseUpdatedAtTrigger', 'SetBenchTotals', 'ResumeUpdatedAtTrigger']);
      const connection = await db.sql.reserve();
      await connection.unsafe('SET statement_timeout = 0');
      await connection.unsafe(statements.get('VacuumBench') as string);
      connection.release();
      process.stderr.write(`bench: seeded in ${Math.round((performance.now() - started) / 1000)} s\n`);
    }
    const admin = await db.one<{ id: number }>('FindUserByEmail', ['bench-admin@example.com']);
    const customer = await db.one<{ id: number }>('FindUserByEmail', ['bench-customer-1@example.com']);
    const token = (await createToken(db, admin!.id, ['orders:read', 'orders:write'], 3600)).token;
    const customerToken = (await createToken(db, customer!.id, ['orders:read', 'orders:write'], 3600)).token;
    const orderIds = ((await run(db, 'SampleOrderIds')) as unknown as { id: number }[]).map((r) => r.id);
    const [busiest] = (await run(db, 'BusiestCustomer')) as unknown as [{ id: number }];
    return { token, customerToken, customerId: customer!.id, orderIds, busiest: busiest!.id };
  } finally {
    await db.close();
  }
}

/** `wrk` when it is on PATH (or BENCH_LOAD says so), else autocannon, saying why. */
function loadTool(): 'wrk' | 'autocannon' {
  const wanted = process.env.BENCH_LOAD;
  if (wanted === 'autocannon') return 'autocannon';
  const onPath = (process.env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, 'wrk'), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
  if (onPath) return 'wrk';
  process.stderr.write(
    `bench: ${wanted === 'wrk' ? 'BENCH_LOAD=wrk, but ' : ''}wrk is not installed: using autocannon, which takes ` +
      `more of the machine's CPU ` +
      '(figures are lower than with wrk; install it with `apt-get install wrk` or `brew install wrk`)\n',
  );
  return 'autocannon';
}

interface Started {
  child: ChildProcess;
  match: RegExpExecArray;
}

/**
 * Starts a node process and waits for `ready` on `stream`. `stdoutFile`: the
 * child's stdout goes to that file instead (the server's request log).
 */
function startProcess(
  args: string[],
  extraEnv: NodeJS.ProcessEnv,
  ready: RegExp,
  stream: 'stdout' | 'stderr',
  stdoutFile?: string,
): Promise<Started> {
  const fd = stdoutFile === undefined ? undefined : openSync(stdoutFile, 'w');
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...extraEnv },
    stdio: ['ignore', fd ?? 'pipe', 'pipe'],
  });
  if (fd !== undefined) closeSync(fd);
  let text = '';
  return new Promise((resolve, reject) => {
    child[stream]!.on('data', (d: Buffer) => {
      text += d.toString();
      const match = ready.exec(text);
      if (match) resolve({ child, match });
    });
    (stream === 'stdout' ? child.stderr : child.stdout)?.resume();
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}: ${text}`)));
  });
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

/** Peak resident set (VmHWM) of a process and its children, in MB. */
function peakRss(pid: number): number {
  const pids = [pid];
  try {
    pids.push(
      ...readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number),
    );
  } catch {
    /* no children */
  }
  let total = 0;
  for (const p of pids) {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, 'utf8'));
    total += match ? Number(match[1]) : 0;
  }
  return Math.round(total / 1024);
}

interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  errors: number;
  statusCodes: Record<string, number>;
  /** The server's CPU time (user + system) per completed request, in ms; null when not measured. */
  cpuMsPerRequest: number | null;
}

interface Row extends LoadResult {
  ratioToCeiling?: number;
  /** Scenario 1 and the peer: each round's result; the row holds their medians. */
  rounds?: LoadResult[];
}

type Load = (url: string, cpuPid: number, scenario: Record<string, unknown>) => Promise<LoadResult>;

/** Runs one scenario from bench/load.mjs with `tool`, charging CPU to `cpuPid` (and its children). */
const loader =
  (tool: 'wrk' | 'autocannon'): Load =>
  async (url, cpuPid, scenario) => {
    const child = spawn(
      process.execPath,
      [
        'bench/load.mjs',
        JSON.stringify({
          tool,
          url,
          connections: CONNECTIONS,
          warmupSeconds: WARMUP,
          durationSeconds: SECONDS,
          headers: {},
          cpuPids: [cpuPid],
          ...scenario,
        }),
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const [code] = await once(child, 'exit');
    if (code !== 0) throw new Error(`load generator exited with ${code}`);
    return JSON.parse(out) as LoadResult;
  };

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** One row from several rounds: medians of the rates, latencies and CPU; sums of the counts. */
function medianRow(rounds: LoadResult[]): Row {
  const statusCodes: Record<string, number> = {};
  for (const r of rounds)
    for (const [code, n] of Object.entries(r.statusCodes)) statusCodes[code] = (statusCodes[code] ?? 0) + n;
  const cpu = rounds.map((r) => r.cpuMsPerRequest).filter((c): c is number => c !== null);
  return {
    rps: Math.round(median(rounds.map((r) => r.rps))),
    p50: median(rounds.map((r) => r.p50)),
    p99: median(rounds.map((r) => r.p99)),
    requests: rounds.reduce((n, r) => n + r.requests, 0),
    errors: rounds.reduce((n, r) => n + r.errors, 0),
    statusCodes,
    cpuMsPerRequest: cpu.length === 0 ? null : Math.round(median(cpu) * 1000) / 1000,
    rounds,
  };
}

const round3 = (n: number) => Math.round(n * 1000) / 1000;

async function main(): Promise<void> {
  const prepared = await prepare();
  if (process.env.BENCH_SEED_ONLY === '1') return;
  const tool = loadTool();
  const load = loader(tool);
  mkdirSync(RESULTS, { recursive: true });
  // Every feature on (contract §14 targets): auth, ETag, rate limiting with a
  // limit no scenario reaches, and one JSON log line per request to a file.
  const serverEnv: NodeJS.ProcessEnv = {
    PORT: '0',
    RATE_LIMIT,
    LOG_LEVEL: 'info',
    WORKERS: String(WORKERS),
    ...(databaseUrl ? {} : { DATA_DIR: dataDir }),
  };
  // The built program (`make build`), as production runs it; BENCH_PROFILE=1
  // writes the server's CPU profile to bench/results/profile/ on exit.
  const profile = process.env.BENCH_PROFILE === '1' ? ['--cpu-prof', `--cpu-prof-dir=${RESULTS}/profile`] : [];
  // With the flags of its #! line (scripts/build.mjs), as `make run` starts it.
  const flags = (
    /^#!.*?\bnode\b(.*)$/m.exec(readFileSync(`${ROOT}dist/orders.mjs`, 'utf8').split('\n', 1)[0] as string)?.[1] ?? ''
  )
    .trim()
    .split(/\s+/)
    .filter(Boolean);
  const { child: server, match } = await startProcess(
    [...flags, ...profile, 'dist/orders.mjs'],
    serverEnv,
    /listening on (http:\/\/\S+)/,
    'stderr',
    SERVER_LOG,
  );
  const url = match[1] as string;
  const serverPid = server.pid as number;
  const auth = { authorization: `Bearer ${prepared.token}` };
  let peer: ChildProcess | undefined;
  try {
    const sample = await fetch(`${url}/v1/orders/${prepared.orderIds[0]}`, { headers: auth });
    const sampleBody = await sample.text();
    const etag = sample.headers.get('etag') as string;
    if (sample.status !== 200 || sample.headers.get('ratelimit-policy') === null) {
      throw new Error(
        'bench: the sample GET answered ' +
          `${sample.status}${sample.headers.get('ratelimit-policy') === null ? ' without RateLimit-Policy' : ''}: ` +
          `${sampleBody}`,
      );
    }
    const headers: Record<string, string> = {};
    sample.headers.forEach((value, name) => {
      if (!['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'].includes(name))
        headers[name] = value;
    });
    const results: Record<string, Row> = {};
    const { child: ceilingProcess, match: port } = await startProcess(
      ['bench/ceiling.mjs', JSON.stringify({ body: sampleBody, headers })],
      {},
      /^(\d+)\n/,
      'stdout',
    );
    try {
      process.stderr.write('bench: ceiling…\n');
      results.ceiling = {
        ...(await load(`http://127.0.0.1:${port[1]}`, ceilingProcess.pid as number, { method: 'GET', paths: ['/'] })),
        ratioToCeiling: 1,
      };
    } finally {
      await stopProcess(ceilingProcess);
    }
    const ceilingRps = results.ceiling.rps;
    const withRatio = (r: Row): Row => ({ ...r, ratioToCeiling: round3(r.rps / ceilingRps) });

    // Scenario 1 and the peer, in alternating rounds on the same database.
    const scenario1 = '1. GET /v1/orders/{random id}';
    const peerName = 'peer: Fastify 5 + postgres, GET /orders/{random id}, no auth';
    let peerUrl: string | undefined;
    let peerSkipped: string | undefined;
    if (databaseUrl === undefined) {
      peerSkipped =
        'the embedded database serves one process, so the peer runs only on a real server: set DATABASE_URL';
      process.stderr.write(`bench: peer skipped: ${peerSkipped}\n`);
    } else {
      const started = await startProcess(
        ['bench/peers/fastify.mjs'],
        { PORT: '0', DATABASE_URL: databaseUrl },
        /listening on (http:\/\/\S+)/,
        'stdout',
      );
      peer = started.child;
      peerUrl = started.match[1] as string;
      const peerBody = await (await fetch(`${peerUrl}/orders/${prepared.orderIds[0]}`)).text();
      if (peerBody !== sampleBody)
        process.stderr.write(
          `bench: warning: the peer's body differs from the service's:\n  service: ${sampleBody}\n  peer:    ` +
            `${peerBody}\n`,
        );
    }
    const ids = prepared.orderIds.map((id) => `/v1/orders/${id}`);
    const ownRounds: LoadResult[] = [];
    const peerRounds: LoadResult[] = [];
    const rounds = peerUrl === undefined ? 1 : Math.max(1, ROUNDS);
    for (let round = 1; round <= rounds; round += 1) {
      process.stderr.write(`bench: ${scenario1} (round ${round}/${rounds})…\n`);
      ownRounds.push(await load(url, serverPid, { method: 'GET', paths: ids, headers: auth }));
      if (peerUrl !== undefined && peer !== undefined) {
        process.stderr.write(`bench: peer (round ${round}/${rounds})…\n`);
        peerRounds.push(
          await load(peerUrl, peer.pid as number, {
            method: 'GET',
            paths: prepared.orderIds.map((id) => `/orders/${id}`),
          }),
        );
      }
    }
    if (peer !== undefined) await stopProcess(peer);
    results[scenario1] = withRatio(medianRow(ownRounds));
    if (peerRounds.length > 0) results[peerName] = withRatio(medianRow(peerRounds));

    const scenarios: [string, Record<string, unknown>][] = [
      [
        '2. GET /v1/orders?status=pending&sort=-createdAt&pageSize=20',
        { method: 'GET', paths: ['/v1/orders?status=pending&sort=-createdAt&pageSize=20'], headers: auth },
      ],
      [
        '3. GET /v1/orders/{id} If-None-Match (304)',
        { method: 'GET', paths: [`/v1/orders/${prepared.orderIds[0]}`], headers: { ...auth, 'if-none-match': etag } },
      ],
      [
        '4. POST /v1/orders, fresh Idempotency-Key',
        {
          method: 'POST',
          paths: ['/v1/orders'],
          freshIdempotencyKey: true,
          headers: { authorization: `Bearer ${prepared.customerToken}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            items: [
              { productId: 1, qty: 2 },
              { productId: 3, qty: 1 },
            ],
          }),
        },
      ],
      [
        `5. GET /v1/orders?customerId=${prepared.busiest}&minTotal=100&sort=-total,id&page=3`,
        {
          method: 'GET',
          paths: [`/v1/orders?customerId=${prepared.busiest}&minTotal=100&sort=-total,id&page=3`],
          headers: auth,
        },
      ],
    ];
    for (const [name, scenario] of scenarios.filter(([name]) => wanted(name))) {
      process.stderr.write(`bench: ${name}…\n`);
      results[name] = withRatio(await load(url, serverPid, scenario));
    }
    const rss = peakRss(serverPid);

    // Scenario 1 over the peer: the median of the rounds' ratios, each
    // round's pair measured back to back under the same background load.
    const ratios = peerRounds.map((p, i) => round3((ownRounds[i] as LoadResult).rps / p.rps));
    const own = results[scenario1] as Row;
    const peerRow = results[peerName];
    const peerRatio = ratios.length === 0 ? undefined : round3(median(ratios));
    const peerSummary =
      peerRow === undefined
        ? { skipped: peerSkipped }
        : {
            rounds: ratios.length,
            ratioScenario1ToPeer: peerRatio,
            ratios,
            cpuMsPerRequest: { scenario1: own.cpuMsPerRequest, peer: peerRow.cpuMsPerRequest },
          };
    const report = {
      when: new Date().toISOString(),
      database: databaseUrl ? 'postgres' : 'embedded',
      orders: ORDERS,
      connections: CONNECTIONS,
      seconds: SECONDS,
      warmupSeconds: WARMUP,
      workers: WORKERS,
      rounds,
      node: process.version,
      loadGenerator: tool,
      features: {
        auth: true,
        etag: true,
        rateLimit: RATE_LIMIT,
        requestLog: 'bench/results/server.log (LOG_LEVEL=info)',
      },
      serverPeakRssMb: rss,
      peer: peerSummary,
      scenarios: results,
    };
    writeFileSync(`${RESULTS}/latest.json`, `${JSON.stringify(report, null, 2)}\n`);

    const rows = Object.entries(results).map(([name, r]) => [
      name,
      String(r.rps),
      r.p50.toFixed(1),
      r.p99.toFixed(1),
      String(r.errors),
      r.cpuMsPerRequest === null ? '–' : r.cpuMsPerRequest.toFixed(3),
      (r.ratioToCeiling ?? 1).toFixed(3),
    ]);
    const header = ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx/304', 'CPU ms/req', '× ceiling'];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
    const line = (cells: string[]) =>
      cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ');
    console.log(
      `\n${report.database}, ${ORDERS} orders, ${CONNECTIONS} connections (${tool}), ${SECONDS} s per scenario ` +
        `after ${WARMUP} s warm-up, ${WORKERS} worker(s), node ${process.version}`,
    );
    console.log(
      `server: auth, ETag, RATE_LIMIT=${RATE_LIMIT}, request log to bench/results/server.log; CPU ms/req: the ` +
        `server process's user+system time per request`,
    );
    console.log(line(header));
    for (const row of rows) console.log(line(row));
    if (peerRow === undefined) {
      console.log(`peer: skipped: ${peerSkipped}`);
    } else {
      console.log(
        `scenario 1 / peer: ${peerRatio?.toFixed(3)} × (median of ${ratios.length} alternating rounds: ` +
          `${ratios.map((r) => r.toFixed(3)).join(', ')}); ` +
          `CPU per request ${own.cpuMsPerRequest?.toFixed(3)} ms against the peer's ` +
          `${peerRow.cpuMsPerRequest?.toFixed(3)} ms`,
      );
    }
    console.log(
      `server peak RSS: ${rss} MB\nrequest log: bench/results/server.log ` +
        `(${Math.round(statSync(SERVER_LOG).size / 1e6)} MB)\nwritten: bench/results/latest.json`,
    );
  } finally {
    if (peer !== undefined) await stopProcess(peer);
    await stopProcess(server);
  }
}

await main();
