/**
 * `make bench` (SPEC §14): seeds the benchmark data on the database of
 * DATABASE_URL (or the embedded one in ./data-bench, saying so), starts the
 * server with rate limiting off, and drives each scenario from a separate
 * process (autocannon) over loopback: a warm-up, then a fixed duration. A
 * ceiling row serves the same bytes from memory with bare node:http. Prints
 * a table and writes bench/results/latest.json.
 *
 * Environment: BENCH_ORDERS (default 100000), BENCH_CONNECTIONS (32),
 * BENCH_SECONDS (10), BENCH_WARMUP_SECONDS (3), WORKERS (1), and
 * BENCH_SEED_ONLY=1 to seed and stop (for bench/explain.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createToken } from '../src/auth/token-store.ts';
import { openDatabase, type Database } from '../src/db/database.ts';
import { migrate } from '../src/db/migrate.ts';
import { seed } from '../src/db/seed.ts';
import { parseStatements } from '../src/db/statements.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const ORDERS = env('BENCH_ORDERS', 100_000);
const CONNECTIONS = env('BENCH_CONNECTIONS', 32);
const SECONDS = env('BENCH_SECONDS', 10);
const WARMUP = env('BENCH_WARMUP_SECONDS', 3);
const WORKERS = env('WORKERS', 1);
const databaseUrl = process.env.DATABASE_URL;
const dataDir = `${ROOT}data-bench`;

const statements = new Map(parseStatements(readFileSync(`${ROOT}bench/seed.sql`, 'utf8'), 'bench/seed.sql').map((s) => [s.name, s.text]));
const run = (db: Database, name: string, params: (string | number)[] = []) => db.sql.unsafe(statements.get(name) as string, params);
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
  const admin = await openDatabase({ databaseUrl: target.toString(), dataDir, poolMax: 1 });
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
  if (databaseUrl === undefined) process.stderr.write(`bench: DATABASE_URL is unset: using the embedded database in ${dataDir} (figures are not comparable to a real server)\n`);
  else await ensureDatabase(databaseUrl);
  const db = await openDatabase({ databaseUrl, dataDir, poolMax: 4 });
  try {
    await migrate(db);
    await seed(db);
    await run(db, 'SeedBenchUsers');
    const [{ n }] = (await run(db, 'CountBenchOrders')) as unknown as [{ n: number }];
    if (n < ORDERS) {
      process.stderr.write(`bench: seeding ${ORDERS - n} orders (have ${n})…\n`);
      const started = performance.now();
      for (let left = ORDERS - n; left > 0; left -= 100_000) await runLong(db, ['SeedBenchOrders'], [Math.min(left, 100_000)]);
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

function startProcess(args: string[], extraEnv: NodeJS.ProcessEnv, ready: RegExp, stream: 'stdout' | 'stderr'): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  return new Promise((resolve, reject) => {
    child[stream]!.on('data', (d: Buffer) => {
      text += d.toString();
      const match = ready.exec(text);
      if (match) resolve({ child, match });
    });
    (stream === 'stdout' ? child.stderr : child.stdout)!.resume();
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}: ${text}`)));
  });
}

/** Peak resident set (VmHWM) of a process and its children, in MB. */
function peakRss(pid: number): number {
  const pids = [pid];
  try {
    pids.push(...readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number));
  } catch { /* no children */ }
  let total = 0;
  for (const p of pids) {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, 'utf8'));
    total += match ? Number(match[1]) : 0;
  }
  return Math.round(total / 1024);
}

interface LoadResult { rps: number; p50: number; p99: number; requests: number; errors: number; statusCodes: Record<string, number> }

async function load(url: string, scenario: Record<string, unknown>): Promise<LoadResult> {
  const child = spawn(process.execPath, ['bench/load.mjs', JSON.stringify({ url, connections: CONNECTIONS, warmupSeconds: WARMUP, durationSeconds: SECONDS, headers: {}, ...scenario })], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`load generator exited with ${code}`);
  return JSON.parse(out) as LoadResult;
}

async function main(): Promise<void> {
  const prepared = await prepare();
  if (process.env.BENCH_SEED_ONLY === '1') return;
  const serverEnv: NodeJS.ProcessEnv = { PORT: '0', RATE_LIMIT: 'off', LOG_LEVEL: 'warn', WORKERS: String(WORKERS), ...(databaseUrl ? {} : { DATA_DIR: dataDir }) };
  const { child: server, match } = await startProcess(['--import', 'tsx', 'src/main.ts'], serverEnv, /listening on (http:\/\/\S+)/, 'stderr');
  const url = match[1] as string;
  const auth = { authorization: `Bearer ${prepared.token}` };
  try {
    const sample = await fetch(`${url}/v1/orders/${prepared.orderIds[0]}`, { headers: auth });
    const sampleBody = await sample.text();
    const etag = sample.headers.get('etag') as string;
    const headers: Record<string, string> = {};
    sample.headers.forEach((value, name) => {
      if (!['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'].includes(name)) headers[name] = value;
    });
    const { child: ceilingProcess, match: port } = await startProcess(['bench/ceiling.mjs', JSON.stringify({ body: sampleBody, headers })], {}, /^(\d+)\n/, 'stdout');
    const results: Record<string, LoadResult & { ratioToCeiling?: number }> = {};
    try {
      results.ceiling = await load(`http://127.0.0.1:${port[1]}`, { method: 'GET', paths: ['/'] });
    } finally {
      ceilingProcess.kill('SIGTERM');
    }
    const ids = prepared.orderIds.map((id) => `/v1/orders/${id}`);
    const scenarios: [string, Record<string, unknown>][] = [
      ['1. GET /v1/orders/{random id}', { method: 'GET', paths: ids, headers: auth }],
      ['2. GET /v1/orders?status=pending&sort=-createdAt&pageSize=20', { method: 'GET', paths: ['/v1/orders?status=pending&sort=-createdAt&pageSize=20'], headers: auth }],
      ['3. GET /v1/orders/{id} If-None-Match (304)', { method: 'GET', paths: [`/v1/orders/${prepared.orderIds[0]}`], headers: { ...auth, 'if-none-match': etag } }],
      ['4. POST /v1/orders, fresh Idempotency-Key', {
        method: 'POST', paths: ['/v1/orders'], freshIdempotencyKey: true,
        headers: { authorization: `Bearer ${prepared.customerToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ items: [{ productId: 1, qty: 2 }, { productId: 3, qty: 1 }] }),
      }],
      [`5. GET /v1/orders?customerId=${prepared.busiest}&minTotal=100&sort=-total,id&page=3`, { method: 'GET', paths: [`/v1/orders?customerId=${prepared.busiest}&minTotal=100&sort=-total,id&page=3`], headers: auth }],
    ];
    for (const [name, scenario] of scenarios) {
      process.stderr.write(`bench: ${name}…\n`);
      const result = await load(url, scenario);
      results[name] = { ...result, ratioToCeiling: Math.round((result.rps / results.ceiling.rps) * 1000) / 1000 };
    }
    const rss = peakRss(server.pid as number);
    const report = {
      when: new Date().toISOString(),
      database: databaseUrl ? 'postgres' : 'embedded',
      orders: ORDERS, connections: CONNECTIONS, seconds: SECONDS, warmupSeconds: WARMUP, workers: WORKERS,
      node: process.version,
      serverPeakRssMb: rss,
      scenarios: results,
    };
    mkdirSync(`${ROOT}bench/results`, { recursive: true });
    writeFileSync(`${ROOT}bench/results/latest.json`, JSON.stringify(report, null, 2) + '\n');
    const rows = Object.entries(results).map(([name, r]) => [name, String(r.rps), r.p50.toFixed(1), r.p99.toFixed(1), String(r.errors), r.ratioToCeiling === undefined ? '1.000' : r.ratioToCeiling.toFixed(3)]);
    const header = ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx/304', '× ceiling'];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
    const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ');
    console.log(`\n${report.database}, ${ORDERS} orders, ${CONNECTIONS} connections, ${SECONDS} s per scenario after ${WARMUP} s warm-up, ${WORKERS} worker(s)`);
    console.log(line(header));
    for (const row of rows) console.log(line(row));
    console.log(`server peak RSS: ${rss} MB\nwritten: bench/results/latest.json`);
  } finally {
    server.kill('SIGTERM');
    await once(server, 'exit');
  }
}

await main();
