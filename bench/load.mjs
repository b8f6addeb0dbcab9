// The load generator, run as its own process (SPEC §14): autocannon against
// one scenario, a warm-up and then a measured run. Reads the scenario as
// JSON in argv[2]; prints the result as one JSON line on stdout.
import autocannon from 'autocannon';

const scenario = JSON.parse(process.argv[2]);
const { url, connections, warmupSeconds, durationSeconds, method, paths, headers, body, freshIdempotencyKey } = scenario;

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
    if (freshIdempotencyKey) next.headers = { ...headers, 'idempotency-key': `bench-${process.pid}-${Date.now()}-${sequence}` };
    return next;
  },
};

function run(duration) {
  return new Promise((resolve, reject) => {
    autocannon({ url, connections, duration, requests: [request] }, (error, result) => (error ? reject(error) : resolve(result)));
  });
}

await run(warmupSeconds);
const result = await run(durationSeconds);
const codes = result.statusCodeStats ?? {};
const ok = Object.entries(codes).filter(([code]) => code.startsWith('2') || code === '304').reduce((n, [, s]) => n + s.count, 0);
const total = Object.values(codes).reduce((n, s) => n + s.count, 0);
process.stdout.write(JSON.stringify({
  rps: Math.round(result.requests.average),
  p50: result.latency.p50,
  p99: result.latency.p99,
  requests: total,
  errors: result.errors + result.timeouts + (total - ok),
  statusCodes: Object.fromEntries(Object.entries(codes).map(([code, s]) => [code, s.count])),
}) + '\n');
