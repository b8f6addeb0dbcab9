/**
 * `make bench-overload` (contract §14, "Overload"): the built program and the peers under an open-loop load
 * (bench/open-loop.mjs: a constant arrival rate, coordinated omission corrected, a client time-out) at 1×, 2× and
 * 4× the service's sustainable rate, for GET by id, the pending list and a keyed POST, on the benchmark database of
 * DATABASE_URL (a real server: the peers need one), every feature on as in `make bench`.
 *
 * The sustainable rate of a scenario is the service's throughput under `make bench`'s closed loop (bench/load.mjs,
 * 32 connections): what it completes when every client waits for its answer. Each target then gets the same
 * offered rates. Printed per row: the rate offered, the goodput (answers 2xx or 304 within the client's time-out,
 * a second) and its share of the scenario's peak, p50 and p99 of those answers and the p99's multiple of its value at
 * 1×, the requests refused with 503 (how many carried Retry-After, and how fast they came), those the client gave up
 * on or lost, the slowest answer to /healthz, /readyz and /metrics asked every 100 ms meanwhile (the service only)
 * the server's resident set at the start, at most and at the end, its CPU time (all threads) per request offered,
 * served or refused, and the generator's own worst lag. Also written to bench/results/overload.json.
 *
 * Environment: BENCH_ORDERS (100000), BENCH_OVERLOAD_SECONDS (10, each run), BENCH_OVERLOAD_TIMEOUT_MS (1000, the
 * client's time-out), BENCH_OVERLOAD_FACTORS (1,2,4), BENCH_OVERLOAD_SCENARIOS (1,2,4), BENCH_PEERS (fastify,hono),
 * BENCH_OVERLOAD_SOCKETS (1024, the generator's connections), BENCH_PROFILE (1: the server's CPU profile),
 * BENCH_NODE_FLAGS (node flags for the server beside those of its `#!` line, e.g. to try a collector's flag).
 * The generator shares the machine with the servers: at rates it cannot offer (it says so: "offered" below the
 * rate asked, or a lag of its own) the row measures the generator, not the server. The service's per-address cap on
 * connections is raised above the generator's, whose connections all come from one address.
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import { JSON_TYPE, LIST, ORDER_BODY, prepare, serviceLoads } from './prepare.ts';
import { loader, loadTool, shebangFlags, startPeers, startProcess, stopProcess, type Target } from './processes.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const RESULTS = `${ROOT}bench/results`;
const env = (name: string, fallback: string) => process.env[name] ?? fallback;
const databaseUrl = process.env.DATABASE_URL ?? '';
if (databaseUrl === '' || databaseUrl === 'memory:') {
  process.stderr.write('bench-overload: set DATABASE_URL to a real PostgreSQL server (the peers need one)\n');
  process.exit(2);
}
const SECONDS = Number(env('BENCH_OVERLOAD_SECONDS', '10'));
const TIMEOUT_MS = Number(env('BENCH_OVERLOAD_TIMEOUT_MS', '1000'));
const FACTORS = env('BENCH_OVERLOAD_FACTORS', '1,2,4').split(',').map(Number);
const SCENARIOS = env('BENCH_OVERLOAD_SCENARIOS', '1,2,4').split(',');
const SOCKETS = Number(env('BENCH_OVERLOAD_SOCKETS', '1024'));
const EXTRA_FLAGS = env('BENCH_NODE_FLAGS', '').split(' ').filter(Boolean);
/** One open-loop run's result, as bench/open-loop.mjs prints it. */
interface OpenLoopResult {
  offered: number;
  goodput: number;
  p50: number | null;
  p99: number | null;
  shed: number;
  shedP99: number | null;
  shedWithRetryAfter: number;
  otherStatuses: Record<string, number>;
  timedOut: number;
  errors: number;
  probeMax: number | null;
  probeFailures: number;
  generatorTickMax: number | null;
  cpuUsPerRequest: number | null;
  rssFirstMb: number | null;
  rssMaxMb: number | null;
  rssLastMb: number | null;
}

interface Contender {
  label: string;
  target: Target;
  load: Record<string, unknown>;
  probes: string[];
}

async function openLoop(c: Contender, rate: number): Promise<OpenLoopResult> {
  const child = spawn(
    process.execPath,
    [
      'bench/open-loop.mjs',
      JSON.stringify({
        url: c.target.url,
        headers: {},
        ...c.load,
        rate,
        durationSeconds: SECONDS,
        timeoutMs: TIMEOUT_MS,
        sockets: SOCKETS,
        probes: c.probes,
        pid: c.target.pid,
      }),
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`open-loop generator exited with ${code}`);
  return JSON.parse(out) as OpenLoopResult;
}

/** The service's refusals under overload so far, by what refused them (GET /metrics). */
async function refusedBy(url: string): Promise<{ loop: number; turns: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const count = (by: string) =>
    Number(new RegExp(`^orders_overload_refused_total\\{by="${by}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
  return { loop: count('loop'), turns: count('turns') };
}

const cell = (value: number | null | undefined, digits = 0) =>
  value === null || value === undefined ? '–' : value.toFixed(digits);

async function main(): Promise<void> {
  const prepared = await prepare(databaseUrl, 'data-bench', Number(env('BENCH_ORDERS', '100000')));
  const children: ChildProcess[] = [];
  try {
    // BENCH_PROFILE=1 writes the server's CPU profile to bench/results/profile/ on exit.
    const profile = process.env.BENCH_PROFILE === '1' ? ['--cpu-prof', `--cpu-prof-dir=${RESULTS}/profile`] : [];
    const { child: server, match } = await startProcess(
      [...shebangFlags(`${ROOT}dist/orders.mjs`), ...EXTRA_FLAGS, ...profile, 'dist/orders.mjs'],
      // Every feature on, a rate limit no run reaches; the generator's sockets all come from one address.
      { PORT: '0', RATE_LIMIT: '1000000000/60', LOG_LEVEL: 'info', MAX_CONNECTIONS_PER_ADDRESS: String(SOCKETS + 64) },
      /listening on (http:\/\/\S+)/,
      'stderr',
      '/dev/null',
    );
    children.push(server);
    const service: Target = { url: match[1] as string, pid: server.pid as number, application: 'orders' };
    const peers = await startPeers(databaseUrl);
    children.push(...peers.map((p) => p.child));
    const loads = serviceLoads(prepared, '');
    const peerLoads: Record<string, Record<string, unknown>> = {
      '1': { method: 'GET', paths: prepared.orderIds.map((id) => `/orders/${id}`) },
      '2': { method: 'GET', paths: [LIST] },
      '4': { method: 'POST', paths: ['/orders'], freshIdempotencyKey: true, headers: JSON_TYPE, body: ORDER_BODY },
    };
    const closedLoop = loader(loadTool(), { connections: 32, warmupSeconds: 2, durationSeconds: 5 }, databaseUrl);
    const report: Record<string, unknown>[] = [];
    for (const scenario of SCENARIOS) {
      const own = loads[scenario as '1' | '2' | '4'];
      const peerLoad = peerLoads[scenario];
      if (own === undefined || peerLoad === undefined) throw new Error(`bench-overload: no scenario ${scenario}`);
      const sustainable = (await closedLoop(service, own)).rps;
      process.stderr.write(`bench-overload: scenario ${scenario}: sustainable ${Math.round(sustainable)} req/s\n`);
      const contenders: Contender[] = [
        { label: 'service', target: service, load: own, probes: ['/healthz', '/readyz', '/metrics'] },
        ...peers.map((target) => ({ label: target.label, target, load: peerLoad, probes: [] })),
      ];
      for (const c of contenders) {
        const rows: Record<string, unknown>[] = [];
        for (const factor of FACTORS) {
          process.stderr.write(`bench-overload: scenario ${scenario}, ${c.label}, ${factor}×…\n`);
          const before = c.label === 'service' ? await refusedBy(c.target.url) : undefined;
          const result = await openLoop(c, sustainable * factor);
          const after = before === undefined ? undefined : await refusedBy(c.target.url);
          const by =
            before === undefined || after === undefined
              ? undefined
              : { loop: after.loop - before.loop, turns: after.turns - before.turns };
          rows.push({ factor, rate: Math.round(sustainable * factor), ...result, ...(by ? { refusedBy: by } : {}) });
        }
        report.push({ scenario, target: c.label, sustainable: Math.round(sustainable), rows });
      }
    }
    print(report);
    mkdirSync(RESULTS, { recursive: true });
    writeFileSync(
      `${RESULTS}/overload.json`,
      `${JSON.stringify({ when: new Date().toISOString(), report }, null, 2)}\n`,
    );
  } finally {
    for (const child of children) await stopProcess(child);
  }
}

function print(report: Record<string, unknown>[]): void {
  const lines = [
    `open loop, ${SECONDS} s a run, client time-out ${TIMEOUT_MS} ms; latencies in ms from when each request was due`,
    '| scenario | target | × | offered/s | goodput/s | of peak | p50 | p99 | p99 ÷ 1× | 503 (loop/turns) | 503 p99 | ' +
      'with Retry-After | gave up | errors | probes max | RSS MB start/max/end | CPU µs/request | generator lag max |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const entry of report) {
    const rows = entry.rows as (OpenLoopResult & { factor: number; refusedBy?: { loop: number; turns: number } })[];
    const peak = Math.max(...rows.map((r) => r.goodput));
    const base = rows.find((r) => r.factor === 1)?.p99 ?? null;
    for (const r of rows) {
      const others = Object.values(r.otherStatuses).reduce((a, b) => a + b, 0);
      lines.push(
        `| ${entry.scenario} | ${entry.target} | ${r.factor} | ${r.offered} | ${r.goodput} | ` +
          `${cell((100 * r.goodput) / peak)} % | ${cell(r.p50, 1)} | ${cell(r.p99, 1)} | ` +
          `${base === null || r.p99 === null ? '–' : cell(r.p99 / base, 2)} | ${r.shed}` +
          `${r.refusedBy ? ` (${r.refusedBy.loop}/${r.refusedBy.turns})` : ''} | ${cell(r.shedP99, 1)} | ` +
          `${r.shedWithRetryAfter} | ${r.timedOut} | ${r.errors + others} | ` +
          `${r.probeFailures > 0 ? `${r.probeFailures} failed, ` : ''}${cell(r.probeMax, 1)} | ` +
          `${cell(r.rssFirstMb)}/${cell(r.rssMaxMb)}/${cell(r.rssLastMb)} | ${cell(r.cpuUsPerRequest)} | ` +
          `${cell(r.generatorTickMax, 1)} |`,
      );
    }
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

await main();
