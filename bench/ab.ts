/**
 * `make bench-ab` (contract §14, "every change with its before/after CPU per
 * request from the same run"): two builds of the server, A and B
 * (BENCH_AB=a.mjs,b.mjs, each a `dist/orders.mjs` built from the commit to
 * compare), started side by side on the seeded benchmark database of
 * DATABASE_URL, every feature on as in `make bench`, driven in alternating
 * rounds (the first to go changing each round) by bench/load.mjs with
 * scenarios 1 (GET), 3 (304) and 4 (keyed POST), or those of
 * BENCH_AB_SCENARIOS (2: the list). Prints each row's medians and B's change from A in
 * req/s, Node CPU and PostgreSQL CPU per request.
 *
 * Both servers' connections name themselves `orders`, so the PostgreSQL CPU
 * of a round is read from the backends of both: the idle one's cost nothing.
 *
 * Environment: as bench/run.ts (BENCH_ORDERS, BENCH_CONNECTIONS,
 * BENCH_SECONDS, BENCH_WARMUP_SECONDS, BENCH_RATE_LIMIT), BENCH_ROUNDS
 * (default 5), and BENCH_AB_ENV_A / BENCH_AB_ENV_B: settings for one build
 * only (`DB_POOL_MAX=4,LOG_LEVEL=warn`), to compare two configurations of
 * one build (BENCH_AB=dist/orders.mjs,dist/orders.mjs).
 *
 * @example
 * git stash && make dist/orders.mjs && cp dist/orders.mjs /tmp/a.mjs && git stash pop && make dist/orders.mjs
 * DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_peers BENCH_AB=/tmp/a.mjs,dist/orders.mjs make bench-ab
 */
import { resolve } from 'node:path';
import { prepare, serviceLoads } from './prepare.ts';
import {
  loader,
  loadTool,
  shebangFlags,
  startProcess,
  stopProcess,
  type LoadResult,
  type Target,
} from './processes.ts';
import { median, medianRow, round3 } from './report.ts';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const databaseUrl = process.env.DATABASE_URL;
const builds = (process.env.BENCH_AB ?? '').split(',').filter(Boolean);
if (databaseUrl === undefined || builds.length !== 2) {
  process.stderr.write('bench-ab: set DATABASE_URL (a real server) and BENCH_AB=a.mjs,b.mjs (two built programs)\n');
  process.exit(2);
}
const ROUNDS = env('BENCH_ROUNDS', 5);
const SCENARIOS = (process.env.BENCH_AB_SCENARIOS ?? '1,3,4').split(',').map((s) => s.trim());

/** BENCH_AB_ENV_A or _B: `NAME=value,NAME=value`. */
function settingsOf(name: string): Record<string, string> {
  const pairs = (process.env[name] ?? '').split(',').filter(Boolean);
  return Object.fromEntries(pairs.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
}

/** A build's command line: its file with the flags of its #! line. */
const args = (file: string): string[] => [...shebangFlags(file), resolve(file)];

async function main(): Promise<void> {
  // Tokens both builds take, whichever side of tagged tokens (migration 0016) each is.
  process.env.BENCH_UNTAGGED_TOKENS = '1';
  const prepared = await prepare(databaseUrl, 'data-bench', env('BENCH_ORDERS', 100_000));
  const load = loader(
    loadTool(),
    {
      connections: env('BENCH_CONNECTIONS', 32),
      warmupSeconds: env('BENCH_WARMUP_SECONDS', 3),
      durationSeconds: env('BENCH_SECONDS', 10),
    },
    databaseUrl,
  );
  const servers: Target[] = [];
  const children = [];
  try {
    for (const [i, file] of builds.entries()) {
      const { child, match } = await startProcess(
        args(file),
        {
          PORT: '0',
          RATE_LIMIT: process.env.BENCH_RATE_LIMIT ?? '1000000000/60',
          LOG_LEVEL: 'info',
          ...settingsOf(i === 0 ? 'BENCH_AB_ENV_A' : 'BENCH_AB_ENV_B'),
        },
        /listening on (http:\/\/\S+)/,
        'stderr',
        '/dev/null',
      );
      children.push(child);
      servers.push({ url: match[1] as string, pid: child.pid as number, application: 'orders' });
    }
    // Each build's own scenarios: the 304's If-None-Match is the tag that build gives (two builds may tag an order
    // differently, as when the representation's generation changed).
    const scenariosOf: Record<string, Record<string, unknown>>[] = [];
    for (const server of servers) {
      const first = await fetch(`${server.url}/v1/orders/${prepared.orderIds[0]}`, {
        headers: { authorization: `Bearer ${prepared.token}` },
      });
      await first.arrayBuffer();
      scenariosOf.push(serviceLoads(prepared, first.headers.get('etag') as string));
    }
    const lines = ['scenario  build  req/s  Node CPU ms/req  PG CPU ms/req  B/A req/s (rounds)'];
    for (const s of SCENARIOS) {
      if (scenariosOf[0]?.[s] === undefined) throw new Error(`bench-ab: no scenario ${s} (1, 2, 3 or 4)`);
      const results: [LoadResult[], LoadResult[]] = [[], []];
      for (let round = 0; round < ROUNDS; round += 1)
        for (const i of round % 2 === 0 ? [0, 1] : [1, 0]) {
          process.stderr.write(`bench-ab: scenario ${s}, ${i === 0 ? 'A' : 'B'} (round ${round + 1}/${ROUNDS})…\n`);
          results[i as 0 | 1].push(await load(servers[i] as Target, scenariosOf[i]?.[s] as Record<string, unknown>));
        }
      const ratios = results[1].map((b, i) => round3(b.rps / (results[0][i] as LoadResult).rps));
      for (const [i, name] of ['A', 'B'].entries()) {
        const row = medianRow(results[i as 0 | 1]);
        // Scenario 3 is the 304: a 200 there would measure another thing.
        const expected = s === '3' ? ['304'] : ['200', '201'];
        const bad = row.requests - expected.reduce((sum, code) => sum + (row.statusCodes[code] ?? 0), 0);
        lines.push(
          `${s}  ${name}  ${row.rps}  ${row.cpuMsPerRequest}  ${row.pgCpuMsPerRequest}` +
            (i === 1 ? `  ${round3(median(ratios))} (${ratios.join(', ')})` : '') +
            (bad > 0 ? `  ${bad} unexpected answers: ${JSON.stringify(row.statusCodes)}` : ''),
        );
      }
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    for (const child of children) await stopProcess(child);
  }
}

await main();
