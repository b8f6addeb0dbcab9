// The load generator, run as its own process (contract §14): one scenario, a
// warm-up and then a measured run, with wrk (C, light on a shared machine)
// or autocannon (JavaScript; bench/run.ts falls back to it when wrk is not
// installed). Reads the scenario as JSON in argv[2]; prints the result as
// one JSON line on stdout.
//
// The server's CPU time per request is read from /proc around the measured
// run only: utime + stime of `cpuPids` and their children (a WORKERS=N
// primary's workers), divided by the responses completed. It is the cost a
// change can be judged by on a noisy machine, where req/s moves with
// whatever else runs.
//
// PostgreSQL's CPU time per request likewise: with `pg` ({ databaseUrl,
// applicationName }), the backends of that application_name on that database
// (pg_stat_activity: the connections of the process under load, which names
// itself so) are found just before and just after the measured run, and the
// utime + stime of each from /proc/<pid>/stat (the server is on this machine;
// reading another user's /proc needs root) are summed: after minus before, a
// backend that connected during the run counting from zero. A backend that
// disconnected during the run is lost (counted in pgBackendsLost).
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLOCK_TICKS, ownTicks } from './proc-cpu.mjs';

const scenario = JSON.parse(process.argv[2]);
const {
  tool = 'autocannon',
  url,
  connections,
  warmupSeconds,
  durationSeconds,
  method,
  paths,
  headers,
  body,
  freshIdempotencyKey,
  cpuPids = [],
  pg,
} = scenario;

/** utime + stime in clock ticks of `pid` (all its threads) and of its children. */
function cpuTicks(pids) {
  let ticks = 0;
  for (const pid of pids) {
    let children = [];
    try {
      children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
        .trim()
        .split(/\s+/)
        .filter(Boolean)
        .map(Number);
    } catch {
      /* gone, or no children */
    }
    for (const p of [pid, ...children]) ticks += ownTicks(p) ?? 0;
  }
  return ticks;
}

/**
 * The PostgreSQL backends serving `pg.applicationName`, read through a
 * connection of their own (named apart, so never counted): returns a
 * function that gives their CPU ticks now, per backend pid.
 */
async function backendReader() {
  const { default: postgres } = await import('postgres');
  const sql = postgres(pg.databaseUrl, { max: 1, onnotice: () => {}, connection: { application_name: 'bench-load' } });
  const read = async () => {
    const rows = await sql`
      SELECT pid FROM pg_stat_activity
      WHERE datname = current_database() AND application_name = ${pg.applicationName}`;
    const ticks = new Map();
    for (const { pid } of rows) {
      const t = ownTicks(pid);
      if (t !== undefined) ticks.set(pid, t);
    }
    return ticks;
  };
  return { read, close: () => sql.end({ timeout: 5 }) };
}

const perRequest = (ms, requests) => (requests === 0 ? null : Math.round((ms / requests) * 1000) / 1000);

/**
 * Runs `measure` between two CPU readings; adds cpuMsPerRequest (the Node
 * process) and, with `pg`, pgCpuMsPerRequest (its PostgreSQL backends).
 */
async function measured(measure) {
  const backends = pg === undefined ? undefined : await backendReader();
  try {
    const pgBefore = await backends?.read();
    const before = cpuTicks(cpuPids);
    const result = await measure();
    const cpuMs = ((cpuTicks(cpuPids) - before) * 1000) / CLOCK_TICKS;
    const pgAfter = await backends?.read();
    let pgCpu = {};
    if (pgBefore !== undefined && pgAfter !== undefined) {
      let ticks = 0;
      for (const [pid, t] of pgAfter) ticks += t - (pgBefore.get(pid) ?? 0);
      pgCpu = {
        pgCpuMsPerRequest: pgAfter.size === 0 ? null : perRequest((ticks * 1000) / CLOCK_TICKS, result.requests),
        pgBackends: pgAfter.size,
        pgBackendsLost: [...pgBefore.keys()].filter((pid) => !pgAfter.has(pid)).length,
      };
    }
    return { ...result, cpuMsPerRequest: cpuPids.length === 0 ? null : perRequest(cpuMs, result.requests), ...pgCpu };
  } finally {
    await backends?.close();
  }
}

/** Requests answered 2xx or 304 count as successes; everything else, and socket errors, as errors. */
function summarize(rps, p50, p99, socketErrors, statusCodes) {
  const total = Object.values(statusCodes).reduce((n, c) => n + c, 0);
  const ok = Object.entries(statusCodes)
    .filter(([code]) => code.startsWith('2') || code === '304')
    .reduce((n, [, c]) => n + c, 0);
  return { rps: Math.round(rps), p50, p99, requests: total, errors: socketErrors + (total - ok), statusCodes };
}

// ---- autocannon ----

function runAutocannon(duration) {
  let sequence = 0;
  const request = {
    method,
    path: paths[0],
    headers,
    ...(body === undefined ? {} : { body }),
    setupRequest(req) {
      sequence += 1;
      const path = paths.length === 1 ? paths[0] : paths[Math.floor(Math.random() * paths.length)];
      const next = { ...req, path };
      if (freshIdempotencyKey)
        next.headers = { ...headers, 'idempotency-key': `bench-${process.pid}-${Date.now()}-${sequence}` };
      return next;
    },
  };
  return new Promise((resolve, reject) => {
    autocannon({ url, connections, duration, requests: [request] }, (error, result) => {
      if (error) return reject(error);
      const codes = Object.fromEntries(
        Object.entries(result.statusCodeStats ?? {}).map(([code, s]) => [code, s.count]),
      );
      resolve(
        summarize(
          result.requests.average,
          result.latency.p50,
          result.latency.p99,
          result.errors + result.timeouts,
          codes,
        ),
      );
    });
  });
}

// ---- wrk ----

/** A Lua string literal of ASCII text. */
function lua(text) {
  return `"${[...text]
    .map((c) => {
      const code = c.charCodeAt(0);
      if (code > 126) throw new Error(`bench: non-ASCII text in a wrk script: ${text}`);
      return c === '"' || c === '\\' ? `\\${c}` : code < 32 ? `\\${code}` : c;
    })
    .join('')}"`;
}

/**
 * The wrk script of the scenario: static method, headers and body; a random
 * path per request and a fresh Idempotency-Key where the scenario asks; the
 * status codes counted per thread and summed in done(), which prints the
 * result as one JSON line.
 */
function wrkScript(keyPrefix) {
  const dynamic = paths.length > 1 || freshIdempotencyKey;
  return `
wrk.method = ${lua(method)}
${Object.entries(headers)
  .map(([name, value]) => `wrk.headers[${lua(name)}] = ${lua(value)}`)
  .join('\n')}
${body === undefined ? '' : `wrk.body = ${lua(body)}`}
local paths = { ${paths.map(lua).join(', ')} }
local threads = {}
function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end
statuses = {}
local sequence = 0
function init(args)
  math.randomseed(os.time() * 100 + tid)
end
${
  dynamic
    ? `
function request()
  sequence = sequence + 1
  ${freshIdempotencyKey ? `wrk.headers["idempotency-key"] = ${lua(keyPrefix)} .. tid .. "-" .. sequence` : ''}
  return wrk.format(nil, paths[math.random(#paths)])
end`
    : ''
}
function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end
function done(summary, latency, requests)
  local codes = {}
  for _, thread in ipairs(threads) do
    for code, n in pairs(thread:get("statuses")) do
      table.insert(codes, string.format('[%d,%d]', code, n))
    end
  end
  local e = summary.errors
  io.write(string.format(
    '{"durationUs":%d,"requests":%d,"socketErrors":%d,"p50Us":%d,"p99Us":%d,"statusCodes":[%s]}\\n',
    summary.duration, summary.requests, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99), table.concat(codes, ",")))
end
`;
}

async function runWrk(duration, keyPrefix) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-wrk-'));
  try {
    const script = join(dir, 'scenario.lua');
    writeFileSync(script, wrkScript(keyPrefix));
    const threads = Math.min(2, connections);
    const child = spawn(
      'wrk',
      [
        '-t',
        String(threads),
        '-c',
        String(connections),
        '-d',
        `${Math.max(1, Math.round(duration))}s`,
        '--timeout',
        '10s',
        '-s',
        script,
        `${url}${paths[0]}`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (d) => (out += d.toString()));
    const code = await new Promise((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', resolve);
    });
    const line = out.split('\n').find((l) => l.startsWith('{"durationUs"'));
    if (code !== 0 || line === undefined) throw new Error(`wrk exited with ${code}: ${out}`);
    const raw = JSON.parse(line);
    // [code, count] per thread: several threads may report one code.
    const statusCodes = {};
    for (const [code, n] of raw.statusCodes) statusCodes[code] = (statusCodes[code] ?? 0) + n;
    return summarize(
      raw.requests / (raw.durationUs / 1e6),
      raw.p50Us / 1000,
      raw.p99Us / 1000,
      raw.socketErrors,
      statusCodes,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const run =
  tool === 'wrk'
    ? (duration, phase) => runWrk(duration, `bench-${process.pid}-${Date.now()}-${phase}-`)
    : (duration) => runAutocannon(duration);
if (warmupSeconds > 0) await run(warmupSeconds, 'warm');
const result = await measured(() => run(durationSeconds, 'run'));
process.stdout.write(`${JSON.stringify({ tool, ...result })}\n`);
