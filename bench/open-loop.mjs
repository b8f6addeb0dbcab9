// The open-loop load generator of `make bench-overload` (contract §14, "Overload"), run as its own process: requests
// arrive at a constant rate whatever the server does, as from many independent clients, not from a fixed number
// of connections that each wait for their answer (a closed loop, which slows down with the server and so never
// overloads it). Reads the load as JSON in argv[2]; prints the result as one JSON line on stdout.
//
// Coordinated omission corrected: a request's latency runs from the moment it was due to be sent, not from when a
// socket was free to send it, so a stall counts for every request it held back. A request not answered within
// `timeoutMs` of that moment is given up (its socket destroyed, as a client's time-out does) and counted apart.
// Meanwhile `/healthz`, `/readyz` and `/metrics` are asked every 100 ms on connections of their own, and the
// server's resident set (`pid`) is sampled.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';

const {
  url,
  method,
  paths,
  headers = {},
  body,
  freshIdempotencyKey = false,
  rate,
  durationSeconds,
  timeoutMs = 1_000,
  sockets = 256,
  probes = ['/healthz', '/readyz', '/metrics'],
  pid,
} = JSON.parse(process.argv[2]);

const agent = new http.Agent({ keepAlive: true, maxSockets: sockets, maxFreeSockets: sockets });
const probeAgent = new http.Agent({ keepAlive: true, maxSockets: probes.length });
const target = new URL(url);
const payload = body === undefined ? undefined : Buffer.from(body);

const answered = []; // latency (ms) of each 2xx/304, from when it was due
const shed = []; // latency of each 503
let shedWithRetryAfter = 0;
const otherStatuses = {};
let timedOut = 0;
let errors = 0;
const probeLatencies = [];
let probeFailures = 0;
const rss = [];

/** One request due at `due` (performance.now() time). */
function send(due) {
  const path = paths.length === 1 ? paths[0] : paths[Math.floor(Math.random() * paths.length)];
  const own = freshIdempotencyKey ? { ...headers, 'idempotency-key': randomUUID() } : headers;
  const request = http.request(
    {
      agent,
      host: target.hostname,
      port: target.port,
      method,
      path,
      headers: payload === undefined ? own : { ...own, 'content-length': payload.length },
    },
    (response) => {
      response.resume();
      response.once('end', () => {
        clearTimeout(timer);
        const latency = performance.now() - due;
        const status = response.statusCode;
        if ((status >= 200 && status < 300) || status === 304) answered.push(latency);
        else if (status === 503) {
          shed.push(latency);
          if (response.headers['retry-after'] !== undefined) shedWithRetryAfter += 1;
        } else otherStatuses[status] = (otherStatuses[status] ?? 0) + 1;
      });
    },
  );
  // The client's time-out, from when the request was due.
  let gaveUp = false;
  const timer = setTimeout(
    () => {
      gaveUp = true;
      timedOut += 1;
      request.destroy();
    },
    Math.max(0, due + timeoutMs - performance.now()),
  );
  request.on('error', () => {
    clearTimeout(timer);
    if (!gaveUp) errors += 1;
  });
  request.end(payload);
}

function probe(path) {
  const started = performance.now();
  const request = http.get({ agent: probeAgent, host: target.hostname, port: target.port, path }, (response) => {
    response.resume();
    response.once('end', () => {
      probeLatencies.push(performance.now() - started);
      if (response.statusCode !== 200) probeFailures += 1;
    });
  });
  request.setTimeout(timeoutMs, () => request.destroy());
  request.on('error', () => {
    probeFailures += 1;
  });
}

function sampleRss() {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    if (match) rss.push(Math.round(Number(match[1]) / 1024));
  } catch {
    /* gone */
  }
}

const sampler = setInterval(() => {
  for (const path of probes) probe(path);
  sampleRss();
}, 100);
sampleRss();
const total = Math.round(rate * durationSeconds);
const interval = 1_000 / rate;
const started = performance.now();
let sent = 0;
// Every millisecond or so, every request due by now: timers are late on a busy machine, the schedule is not.
await new Promise((resolve) => {
  const tick = () => {
    const now = performance.now();
    while (sent < total && started + sent * interval <= now) {
      send(started + sent * interval);
      sent += 1;
    }
    if (sent < total) setTimeout(tick, 1);
    else resolve();
  };
  tick();
});
// The last requests' answers or time-outs.
await new Promise((resolve) => {
  const check = () => {
    if (
      answered.length + shed.length + timedOut + errors + Object.values(otherStatuses).reduce((a, b) => a + b, 0) >=
      total
    )
      resolve();
    else setTimeout(check, 10);
  };
  check();
});
clearInterval(sampler);
agent.destroy();
probeAgent.destroy();

const seconds = (performance.now() - started) / 1_000;
const quantile = (values, q) => {
  if (values.length === 0) return null;
  const sorted = Float64Array.from(values).sort();
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] * 10) / 10;
};
process.stdout.write(
  `${JSON.stringify({
    offered: Math.round(total / durationSeconds),
    sent: total,
    goodput: Math.round(answered.length / durationSeconds),
    seconds: Math.round(seconds * 10) / 10,
    answered: answered.length,
    p50: quantile(answered, 0.5),
    p99: quantile(answered, 0.99),
    shed: shed.length,
    shedP50: quantile(shed, 0.5),
    shedP99: quantile(shed, 0.99),
    shedWithRetryAfter,
    otherStatuses,
    timedOut,
    errors,
    probeP99: quantile(probeLatencies, 0.99),
    probeMax: quantile(probeLatencies, 1),
    probeFailures,
    rssFirstMb: rss[0] ?? null,
    rssMaxMb: rss.length === 0 ? null : Math.max(...rss),
    rssLastMb: rss.at(-1) ?? null,
  })}\n`,
);
