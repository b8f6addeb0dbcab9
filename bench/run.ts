/**
 * `make bench` (contract §14): seeds the benchmark data on the database of
 * DATABASE_URL (or the embedded one in ./data-bench, saying so;
 * bench/prepare.ts), starts the server with every feature on (auth, ETag,
 * rate limiting with a high limit, the request log written to
 * bench/results/server.log), and drives each scenario from a separate
 * process (bench/load.mjs: wrk, or autocannon when wrk is not installed)
 * over loopback: a warm-up, then a fixed duration, with the CPU time per
 * request of the Node process (its /proc times) and of its PostgreSQL
 * backends (theirs, found by application_name) read around the measured run.
 *
 * Reference rows: the ceiling (bare node:http serving the same bytes from
 * memory) and the peers, Fastify 5 and Hono 4 on @hono/node-server
 * (bench/peers/: the same SQL and data logic in common.mjs, the project's
 * own patched `postgres` build, no auth), serving GET /orders/{id}, the
 * pending list and a keyed POST. Scenarios 1 (with 3, the 304), 2 and 4 each
 * run in alternating rounds with the peers' same route, the first to go
 * rotating from round to round; each pair's ratio is the median of its
 * rounds' ratios. Scenario 6, beyond §14: a page of 100 orders asked for as
 * identity, gzip and br in alternating rounds, for what coding costs a
 * request; scenario 7, the cursor walk: 1,000 pages of the order list
 * followed by their `next` links, then asked for in random order. Prints the
 * tables and the targets as ratios, warns when a
 * peer's body differs from the service's v1 body, and writes
 * bench/results/latest.json.
 *
 * Environment: BENCH_ORDERS (default 100000), BENCH_CONNECTIONS (32),
 * BENCH_SECONDS (10), BENCH_WARMUP_SECONDS (3), BENCH_ROUNDS (3, the least:
 * rounds of each scenario with its peers), BENCH_RATE_LIMIT (1000000000/60),
 * BENCH_LOAD (`wrk` or `autocannon`; default wrk when on PATH), BENCH_PEERS
 * (`fastify,hono`: which peers run), WORKERS (1), DB_POOL_MAX (the service's
 * default, 10, for the server and the peers), and BENCH_SCENARIOS (e.g.
 * `2,4`: only those of scenarios 2–7; the ceiling and scenario 1 always run),
 * BENCH_SEED_ONLY=1 to seed and stop (for bench/explain.ts), BENCH_PROFILE=1
 * to write the server's CPU profile (`--cpu-prof`) to bench/results/profile/,
 * BENCH_LATENCY_MS to reach the database through bench/latency-proxy.mjs
 * (that delay each way; results in latest-network.json, with each paired
 * route's round trips to the database per request).
 * The server is the built program, dist/orders.mjs (`make bench` builds it).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import postgres from 'postgres';
import { checkBodies, type BodyCheck } from './body-checks.ts';
import { customerHeaders, JSON_TYPE, LIST, ORDER_BODY, prepare, serviceLoads, type Prepared } from './prepare.ts';
import {
  loader,
  loadTool,
  peakRss,
  type Peer,
  shebangFlags,
  startPeers,
  startProcess,
  stopProcess,
  type Load,
  type LoadResult,
  type Target,
} from './processes.ts';
import {
  compare,
  comparisonTable,
  goals,
  goalTable,
  median,
  medianRow,
  ratioOfRounds,
  round3,
  scenarioTable,
  type Comparison,
  type Row,
} from './report.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const ORDERS = env('BENCH_ORDERS', 100_000);
const CONNECTIONS = env('BENCH_CONNECTIONS', 32);
const SECONDS = env('BENCH_SECONDS', 10);
const WARMUP = env('BENCH_WARMUP_SECONDS', 3);
const WORKERS = env('WORKERS', 1);
// contract §14: at least three rounds of each scenario with its peers.
const ROUNDS = Math.max(3, env('BENCH_ROUNDS', 3));
const RATE_LIMIT = process.env.BENCH_RATE_LIMIT ?? '1000000000/60';
const RESULTS = `${ROOT}bench/results`;
const SERVER_LOG = `${RESULTS}/server.log`;
const databaseUrl = process.env.DATABASE_URL;
/** BENCH_SCENARIOS=2,4: only those of scenarios 2–7 (the ceiling and scenario 1 always run), to profile one. */
const ONLY = process.env.BENCH_SCENARIOS?.split(',').map((n) => n.trim());
const wanted = (scenario: string) => ONLY === undefined || ONLY.includes(scenario);
const dataDir = `${ROOT}data-bench`;
/**
 * BENCH_LATENCY_MS: the database across a network (issue 35): every process of the bench reaches PostgreSQL
 * through bench/latency-proxy.mjs, which holds each chunk that long each way.
 */
const LATENCY_MS = process.env.BENCH_LATENCY_MS === undefined ? undefined : Number(process.env.BENCH_LATENCY_MS);
/** Where the results go: the loopback run's, and the run across a link's. */
const RESULT_FILE = LATENCY_MS === undefined ? 'latest.json' : 'latest-network.json';
/** With BENCH_LATENCY_MS: how many requests, one after another, each row's round trips are counted over. */
const ROUND_TRIP_REQUESTS = 100;
/** Asked before those, not counted: more than a pool's connections (DB_POOL_MAX, 10 by default). */
const ROUND_TRIP_WARMUP = 40;
/** The service's connections name themselves so (src/db/connection.ts); the peers `bench-peer-<id>`. */
const SERVICE_APPLICATION = 'orders';

/** One participant of a round: the row it fills, where it is served and what load it gets. */
interface Contender {
  row: string;
  target: Target;
  scenario: Record<string, unknown>;
}

/**
 * Runs `contenders` in `rounds` rounds, each in turn, the first to go moving
 * by one each round (so that no row always runs first); returns each
 * contender's results, a round at a time.
 */
async function inRounds(load: Load, contenders: Contender[], rounds: number): Promise<LoadResult[][]> {
  const results: LoadResult[][] = contenders.map(() => []);
  for (let round = 0; round < rounds; round += 1) {
    for (let k = 0; k < contenders.length; k += 1) {
      const i = (round + k) % contenders.length;
      const c = contenders[i] as Contender;
      process.stderr.write(`bench: ${c.row} (round ${round + 1}/${rounds})…\n`);
      (results[i] as LoadResult[]).push(await load(c.target, c.scenario));
    }
  }
  return results;
}

/** The server's command line: the built program with the flags of its #! line (scripts/build.mjs). */
function serverArgs(): string[] {
  // BENCH_PROFILE=1 writes the server's CPU profile to bench/results/profile/ on exit.
  const profile = process.env.BENCH_PROFILE === '1' ? ['--cpu-prof', `--cpu-prof-dir=${RESULTS}/profile`] : [];
  const flags = shebangFlags(`${ROOT}dist/orders.mjs`);
  return [...flags, ...profile, 'dist/orders.mjs'];
}

/** Scenario 7: how many pages the walk follows, the load then asking for them in random order. */
const WALK_PAGES = 1_000;

/**
 * Scenario 7's paths: the admin's list in its default order, page after page by
 * each answer's `Link: <…>; rel="next"` (cursor pages, contract §4), 20,000
 * rows deep.
 */
async function walk(base: string, auth: Record<string, string>): Promise<string[]> {
  const paths: string[] = [];
  let path: string | undefined = '/v1/orders?pageSize=20';
  while (path !== undefined && paths.length < WALK_PAGES) {
    const answer = await fetch(`${base}${path}`, { headers: auth });
    await answer.arrayBuffer();
    if (answer.status !== 200) throw new Error(`the walk got ${answer.status} for ${path}`);
    const next = /<([^>]+)>;\s*rel="next"/.exec(answer.headers.get('link') ?? '')?.[1];
    path = next === undefined ? undefined : new URL(next, base).pathname + new URL(next, base).search;
    if (path !== undefined) paths.push(path);
  }
  return paths;
}

/** Scenario 6's page: the first 100 orders by id, about 35 KB of version 2 JSON. */
const CODED_PAGE = '/v2/orders?sort=id&pageSize=100';

/**
 * Scenario 6: the same page of 100 orders asked for as identity, gzip and
 * br, in alternating rounds; each coding's row, and the bytes each sends.
 */
async function codings(
  load: Load,
  service: Target,
  auth: Record<string, string>,
  rounds: number,
  results: Record<string, Row>,
  ceilingRps: number,
): Promise<Record<string, { bytes: number; cpuMsPerRequest: number | null }>> {
  const names = ['identity', 'gzip', 'br'];
  const contenders = names.map((coding) => ({
    row: `6. GET ${CODED_PAGE}, Accept-Encoding: ${coding}`,
    target: service,
    scenario: { method: 'GET', paths: [CODED_PAGE], headers: { ...auth, 'accept-encoding': coding } },
  }));
  const measured = await inRounds(load, contenders, rounds);
  const summary: Record<string, { bytes: number; cpuMsPerRequest: number | null }> = {};
  for (const [i, c] of contenders.entries()) {
    const row = medianRow(measured[i] as LoadResult[]);
    results[c.row] = { ...row, ratioToCeiling: round3(row.rps / ceilingRps) };
    const answer = await fetch(`${service.url}${CODED_PAGE}`, {
      headers: { ...auth, 'accept-encoding': names[i] as string },
    });
    await answer.arrayBuffer();
    summary[names[i] as string] = {
      bytes: Number(answer.headers.get('content-length')),
      cpuMsPerRequest: row.cpuMsPerRequest,
    };
  }
  return summary;
}

/** A scenario of the service with the peers' same route, measured in the same rounds. */
interface Pair {
  scenario: string;
  own: Contender;
  /** The peers' route, for their rows' names, and the load it gets. */
  route: string;
  peer: Record<string, unknown>;
  /** Another of the service's scenarios in the same rounds: the 304, for its ratio to scenario 1. */
  also?: Contender;
}

/** Scenarios 1 (with 3), 2 and 4, each with the peers' same route. */
function pairs(service: Target, prepared: Prepared, etag: string): Pair[] {
  const ids = prepared.orderIds;
  const loads = serviceLoads(prepared, etag);
  return [
    {
      scenario: '1',
      own: {
        row: '1. GET /v1/orders/{random id}',
        target: service,
        scenario: loads['1'],
      },
      route: 'GET /orders/{random id}',
      peer: { method: 'GET', paths: ids.map((id) => `/orders/${id}`) },
      ...(wanted('3')
        ? {
            also: {
              row: '3. GET /v1/orders/{id} If-None-Match (304)',
              target: service,
              scenario: loads['3'],
            },
          }
        : {}),
    },
    {
      scenario: '2',
      own: {
        row: `2. GET /v1${LIST}`,
        target: service,
        scenario: loads['2'],
      },
      route: `GET ${LIST}`,
      peer: { method: 'GET', paths: [LIST] },
    },
    {
      scenario: '4',
      own: {
        row: '4. POST /v1/orders, fresh Idempotency-Key',
        target: service,
        scenario: loads['4'],
      },
      route: 'POST /orders, fresh Idempotency-Key',
      peer: { method: 'POST', paths: ['/orders'], freshIdempotencyKey: true, headers: JSON_TYPE, body: ORDER_BODY },
    },
  ];
}

async function main(): Promise<void> {
  const prepared = await prepare(databaseUrl, dataDir, ORDERS);
  if (process.env.BENCH_SEED_ONLY === '1') return;
  const tool = loadTool();
  const load = loader(tool, { connections: CONNECTIONS, warmupSeconds: WARMUP, durationSeconds: SECONDS }, databaseUrl);
  mkdirSync(RESULTS, { recursive: true });
  const link = LATENCY_MS === undefined ? undefined : await startLink(databaseUrl, LATENCY_MS);
  // Every feature on (contract §14 targets): auth, ETag, rate limiting with a
  // limit no scenario reaches, and one JSON log line per request to a file.
  const { child: server, match } = await startProcess(
    serverArgs(),
    {
      PORT: '0',
      RATE_LIMIT,
      LOG_LEVEL: 'info',
      WORKERS: String(WORKERS),
      ...(databaseUrl ? {} : { DATA_DIR: dataDir }),
      ...(link === undefined ? {} : { DATABASE_URL: link.url }),
    },
    /listening on (http:\/\/\S+)/,
    'stderr',
    SERVER_LOG,
  );
  const service: Target = { url: match[1] as string, pid: server.pid as number, application: SERVICE_APPLICATION };
  const auth = { authorization: `Bearer ${prepared.token}` };
  let peers: Peer[] = [];
  try {
    const sample = await fetch(`${service.url}/v1/orders/${prepared.orderIds[0]}`, { headers: auth });
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
      const ceiling = { url: `http://127.0.0.1:${port[1]}`, pid: ceilingProcess.pid as number };
      results.ceiling = { ...(await load(ceiling, { method: 'GET', paths: ['/'] })), ratioToCeiling: 1 };
    } finally {
      await stopProcess(ceilingProcess);
    }
    const ceilingRps = results.ceiling.rps;

    let peersSkipped: string | undefined;
    if (databaseUrl === undefined) {
      peersSkipped =
        'the embedded database serves one process, so the peers run only on a real server: set DATABASE_URL';
      process.stderr.write(`bench: peers skipped: ${peersSkipped}\n`);
    } else {
      peers = await startPeers(link?.url ?? databaseUrl);
      for (const p of peers) process.stderr.write(`bench: peer ${p.label} on ${p.url} (driver: ${p.driver})\n`);
    }
    const bodyChecks: BodyCheck[] = await checkBodies({
      service: service.url,
      peers,
      orderId: prepared.orderIds[0] as number,
      sampleBody,
      auth,
      list: LIST,
      post: wanted('4') ? { body: ORDER_BODY, headers: customerHeaders(prepared) } : undefined,
    });

    // The pairs: each scenario with the peers' same route, in alternating rounds.
    const rounds = peers.length === 0 ? 1 : ROUNDS;
    const comparisons: Comparison[] = [];
    let ratio304: { ratio: number; ratios: number[] } | undefined;
    /** §14: the 304 against each peer's GET, from the same rounds, and its Node CPU against the 200's. */
    const the304: { peers: { peer: string; ratio: number }[]; cpu?: { of304: number; of200: number } } = {
      peers: [],
    };
    const paired: Contender[] = [];
    for (const g of pairs(service, prepared, etag).filter((g) => g.scenario === '1' || wanted(g.scenario))) {
      const peerContenders = peers.map((p) => ({ row: `${p.label}: ${g.route}`, target: p, scenario: g.peer }));
      const contenders = [g.own, ...peerContenders, ...(g.also ? [g.also] : [])];
      paired.push(...contenders);
      const measured = await inRounds(load, contenders, rounds);
      const rows = contenders.map((c, i) => [c.row, medianRow(measured[i] as LoadResult[])] as [string, Row]);
      for (const [name, row] of rows) results[name] = { ...row, ratioToCeiling: round3(row.rps / ceilingRps) };
      for (const [i, p] of peers.entries()) comparisons.push(compare(g.scenario, p.label, rows[0]!, rows[i + 1]!));
      if (g.also) {
        const of304 = measured.at(-1) as LoadResult[];
        ratio304 = ratioOfRounds(of304, measured[0] as LoadResult[]);
        for (const [i, p] of peers.entries())
          the304.peers.push({ peer: p.label, ratio: ratioOfRounds(of304, measured[i + 1] as LoadResult[]).ratio });
        const [cpu304, cpu200] = [rows.at(-1)?.[1].cpuMsPerRequest, rows[0]?.[1].cpuMsPerRequest];
        if (typeof cpu304 === 'number' && typeof cpu200 === 'number') the304.cpu = { of304: cpu304, of200: cpu200 };
      }
    }
    if (wanted('5')) {
      const name = `5. GET /v1/orders?customerId=${prepared.busiest}&minTotal=100&sort=-total,id&page=3`;
      process.stderr.write(`bench: ${name}…\n`);
      const path = `/v1/orders?customerId=${prepared.busiest}&minTotal=100&sort=-total,id&page=3`;
      const row = await load(service, { method: 'GET', paths: [path], headers: auth });
      results[name] = { ...row, ratioToCeiling: round3(row.rps / ceilingRps) };
    }
    // contract §14's peak RSS is the server's over its scenarios (1-5); 6 and 7 go beyond it, so after the reading.
    const rss = peakRss(service.pid);
    if (wanted('7')) {
      const name = `7. cursor walk: ${WALK_PAGES} pages of GET /v1/orders?pageSize=20 by their next links`;
      process.stderr.write(`bench: ${name}…\n`);
      const row = await load(service, { method: 'GET', paths: await walk(service.url, auth), headers: auth });
      results[name] = { ...row, ratioToCeiling: round3(row.rps / ceilingRps) };
    }
    // What coding costs (contract §16): one page of 100 orders as identity, gzip and br, in alternating rounds.
    const compression = wanted('6') ? await codings(load, service, auth, rounds, results, ceilingRps) : undefined;
    const rssWithExtras = peakRss(service.pid);
    const targets = goals(comparisons, the304, rss);
    const network = link === undefined ? undefined : { ...link.measured, roundTrips: await roundTrips(link, paired) };
    if (network !== undefined) printNetwork(network);

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
      serverPeakRssMbAfterScenarios6And7: rssWithExtras,
      peers: peersSkipped
        ? { skipped: peersSkipped }
        : peers.map((p) => ({ id: p.id, label: p.label, driver: p.driver })),
      comparisons,
      ratio304ToScenario1: ratio304,
      ratios304ToPeersGet: the304.peers,
      network,
      compression,
      targets,
      bodyChecks,
      scenarios: results,
    };
    writeFileSync(`${RESULTS}/${RESULT_FILE}`, `${JSON.stringify(report, null, 2)}\n`);
    printReport(report.database, tool, results, comparisons, targets, bodyChecks, [rss, rssWithExtras], peersSkipped);
  } finally {
    for (const p of peers) await stopProcess(p.child);
    await stopProcess(server);
    if (link !== undefined) await stopProcess(link.child);
  }
}

/** The latency proxy in front of the database, and its added round trip as measured through it. */
interface Link {
  child: ChildProcess;
  url: string;
  stats(): Promise<{ toServer: number; toClient: number }>;
  measured: { delayMsEachWay: number; roundTripMs: { direct: number; throughLink: number } };
}

/** Starts bench/latency-proxy.mjs in front of `databaseUrl`'s server, and measures what it adds to a round trip. */
async function startLink(databaseUrl: string | undefined, delayMs: number): Promise<Link> {
  if (databaseUrl === undefined) throw new Error('bench: BENCH_LATENCY_MS needs a real server (DATABASE_URL)');
  const target = new URL(databaseUrl);
  const { child, match } = await startProcess(
    ['bench/latency-proxy.mjs', target.hostname, target.port || '5432', String(delayMs)],
    {},
    /^(\d+)\n/,
    'stdout',
  );
  const url = Object.assign(new URL(databaseUrl), { hostname: '127.0.0.1', port: match[1] as string }).toString();
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream })[Symbol.asyncIterator]();
  const stats = async () => {
    child.kill('SIGUSR2');
    return JSON.parse((await lines.next()).value as string) as { toServer: number; toClient: number };
  };
  const roundTripMs = { direct: await selectOneMs(databaseUrl), throughLink: await selectOneMs(url) };
  process.stderr.write(
    `bench: the database through a link of ${delayMs} ms each way: a round trip ${roundTripMs.throughLink} ms ` +
      `(${roundTripMs.direct} ms direct)\n`,
  );
  return { child, url, stats, measured: { delayMsEachWay: delayMs, roundTripMs } };
}

/** The median time of `SELECT 1` on `url`, one after another, in ms. */
async function selectOneMs(url: string): Promise<number> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await sql`SELECT 1`;
    const times: number[] = [];
    for (let i = 0; i < 50; i += 1) {
      const start = performance.now();
      await sql`SELECT 1`;
      times.push(performance.now() - start);
    }
    return round3(median(times));
  } finally {
    await sql.end();
  }
}

/**
 * Each contender's round trips to the database per request: its route asked `ROUND_TRIP_REQUESTS` times, one
 * after another, and the bursts the link forwarded each way meanwhile (background work, such as the webhook
 * worker's polls, counts too: a few hundredths).
 */
async function roundTrips(link: Link, contenders: Contender[]) {
  const counted: Record<string, { toServer: number; toClient: number }> = {};
  for (const c of contenders) {
    const scenario = c.scenario as {
      method: string;
      paths: string[];
      headers?: Record<string, string>;
      body?: string;
      freshIdempotencyKey?: boolean;
    };
    const ask = async (i: number) => {
      const key = scenario.freshIdempotencyKey ? { 'idempotency-key': `round-trip-${Date.now()}-${i}` } : {};
      const response = await fetch(`${c.target.url}${scenario.paths[i % scenario.paths.length]}`, {
        method: scenario.method,
        headers: { ...scenario.headers, ...key },
        ...(scenario.body === undefined ? {} : { body: scenario.body }),
      });
      await response.arrayBuffer();
    };
    // Unmeasured first: one at a time, each connection of the pool prepares the statements it had not run alone.
    for (let i = 0; i < ROUND_TRIP_WARMUP; i += 1) await ask(i);
    const before = await link.stats();
    for (let i = 0; i < ROUND_TRIP_REQUESTS; i += 1) await ask(ROUND_TRIP_WARMUP + i);
    const after = await link.stats();
    counted[c.row] = {
      toServer: round3((after.toServer - before.toServer) / ROUND_TRIP_REQUESTS),
      toClient: round3((after.toClient - before.toClient) / ROUND_TRIP_REQUESTS),
    };
  }
  return counted;
}

function printNetwork(network: Link['measured'] & { roundTrips: Record<string, { toServer: number }> }): void {
  const { delayMsEachWay, roundTripMs } = network;
  process.stdout.write(
    `\nThe database through a link of ${delayMsEachWay} ms each way (bench/latency-proxy.mjs): a round trip ` +
      `${roundTripMs.throughLink} ms, ${roundTripMs.direct} ms direct.\n` +
      `Round trips to the database per request (${ROUND_TRIP_REQUESTS} requests one after another):\n`,
  );
  for (const [row, { toServer }] of Object.entries(network.roundTrips))
    process.stdout.write(`  ${toServer.toFixed(2).padStart(6)}  ${row}\n`);
}

function printReport(
  database: string,
  tool: string,
  results: Record<string, Row>,
  comparisons: Comparison[],
  targets: ReturnType<typeof goals>,
  bodyChecks: BodyCheck[],
  [rss, rssWithExtras]: [number, number],
  peersSkipped: string | undefined,
): void {
  const lost = Object.values(results).reduce((n, r) => n + (r.pgBackendsLost ?? 0), 0);
  console.log(
    `\n${database}, ${ORDERS} orders, ${CONNECTIONS} connections (${tool}), ${SECONDS} s per scenario ` +
      `after ${WARMUP} s warm-up, ${WORKERS} worker(s), node ${process.version}`,
  );
  console.log(
    `server: auth, ETag, RATE_LIMIT=${RATE_LIMIT}, request log to bench/results/server.log. Node CPU ms/req: the ` +
      `serving process's user+system time per request; PG CPU ms/req: that of its PostgreSQL backends` +
      (lost > 0 ? ` (${lost} backend(s) disconnected during a run: their CPU is missing)` : ''),
  );
  for (const line of scenarioTable(results)) console.log(line);
  if (peersSkipped !== undefined) console.log(`peers: skipped: ${peersSkipped}`);
  else {
    console.log(`\nservice / peer, medians of alternating rounds (ratio: service req/s ÷ peer req/s):`);
    for (const line of comparisonTable(comparisons)) console.log(line);
  }
  console.log('');
  for (const line of goalTable(targets)) console.log(line);
  for (const check of bodyChecks.filter((c) => !c.same))
    console.log(`warning: ${check.peer}, ${check.route}: ${check.detail}`);
  console.log(
    `server peak RSS: ${rss} MB over scenarios 1-5, ${rssWithExtras} MB after 6 and 7\n` +
      'request log: bench/results/server.log ' +
      `(${Math.round(statSync(SERVER_LOG).size / 1e6)} MB)\nwritten: bench/results/${RESULT_FILE}`,
  );
}

await main();
