// The open-loop load generator of `make bench-overload` (contract §14, "Overload"), run as its own process: requests
// arrive at a constant rate whatever the server does, as from many independent clients, not from a fixed number
// of connections that each wait for their answer (a closed loop, which slows down with the server and so never
// overloads it). Reads the load as JSON in argv[2]; prints the result as one JSON line on stdout.
//
// Coordinated omission corrected: a request's latency runs from the moment it was due to be sent, not from when a
// socket was free to send it, so a stall counts for every request it held back. A request not answered within
// `timeoutMs` of that moment is given up (its socket destroyed, as a client's time-out does) and counted apart.
// `sockets` keep-alive connections (1,024 by default), opened and answered once before the clock starts; a request
// due when all are busy waits in the generator's queue, its wait counted. Requests go out on raw `net` sockets and
// answers are parsed only as far as their status and framing: node's HTTP client cost 46 µs of CPU a request, more
// than a core at the GET's rate on a machine shared with the server; this costs about 20. How late the generator's
// own 1 ms tick came is reported too: a row whose generator lagged measures the machine.
// Meanwhile `/healthz`, `/readyz` and `/metrics` are asked every 100 ms on connections of their own, and the
// server's resident set (`pid`) is sampled; its CPU time (all its threads) over the run, per request offered, is
// what a request cost it, served or refused.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { CLOCK_TICKS, ownTicks } from './proc-cpu.mjs';

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
  sockets = 1_024,
  probes = ['/healthz', '/readyz', '/metrics'],
  pid,
} = JSON.parse(process.argv[2]);

const probeAgent = new http.Agent({ keepAlive: true, maxSockets: probes.length });
const target = new URL(url);
const payload = body === undefined ? undefined : Buffer.from(body);
const fixedHead = Object.entries({ host: target.host, ...headers })
  .map(([name, value]) => `${name}: ${value}\r\n`)
  .join('');

const answered = []; // latency (ms) of each 2xx/304, from when it was due
const shed = []; // latency of each 503
let shedWithRetryAfter = 0;
const otherStatuses = {};
let timedOut = 0;
let errors = 0;
const probeLatencies = [];
let probeFailures = 0;
const rss = [];

// The requests due and not yet sent (no socket free), oldest first, as an agent's queue holds them.
const waiting = [];
let waitingHead = 0;
// Idle keep-alive connections, and the number open.
const idle = [];
// A connection idle for nearly as long as its server keeps one (`Keep-Alive: timeout=N`) is not used again: a request
// sent as the server closes it would be lost in flight. Closed instead, this much before the server would, as
// undici's `keepAliveTimeoutThreshold` does.
const KEEP_ALIVE_MARGIN_MS = 1_000;
let open = 0;
// The connections with a request in flight.
const busy = new Set();

/**
 * One keep-alive connection, on raw `net`: the request's bytes written as one string, the answer parsed only as far
 * as its status, `Retry-After` and its body's framing, so a request costs the generator a few microseconds (node's
 * own HTTP client costs tens, a core's worth at the GET's rate on a 2-core machine shared with the server).
 */
function connect() {
  open += 1;
  const socket = net.connect({ host: target.hostname, port: Number(target.port) });
  socket.setNoDelay(true);
  const c = { socket, due: 0, buffered: null, head: null, left: 0, chunked: false, gone: false, idleUntil: Infinity };
  socket.on('data', (chunk) => received(c, chunk));
  socket.on('error', () => {});
  socket.on('close', () => {
    open -= 1;
    c.gone = true;
    const i = idle.indexOf(c);
    if (i >= 0) idle.splice(i, 1);
    if (busy.delete(c)) errors += 1;
    pump();
  });
  return c;
}

function send(c, due) {
  const path = paths.length === 1 ? paths[0] : paths[Math.floor(Math.random() * paths.length)];
  let head = `${method} ${path} HTTP/1.1\r\n${fixedHead}`;
  if (freshIdempotencyKey) head += `idempotency-key: ${randomUUID()}\r\n`;
  if (payload !== undefined) head += `content-length: ${payload.length}\r\n`;
  c.due = due;
  c.head = null;
  c.buffered = null;
  busy.add(c);
  if (payload === undefined) c.socket.write(`${head}\r\n`);
  else c.socket.write(Buffer.concat([Buffer.from(`${head}\r\n`), payload]));
}

/** Parses what came in on `c`: the head, then the body by its length or its chunks. */
function received(c, chunk) {
  let data = c.buffered === null ? chunk : Buffer.concat([c.buffered, chunk]);
  c.buffered = null;
  for (;;) {
    if (c.head === null) {
      const end = data.indexOf('\r\n\r\n');
      if (end < 0) {
        c.buffered = data;
        return;
      }
      const text = data.toString('latin1', 0, end).toLowerCase();
      c.head = { status: Number(text.slice(9, 12)), retryAfter: text.includes('\r\nretry-after:') };
      c.chunked = /\r\ntransfer-encoding:[^\r]*chunked/.test(text);
      const length = /\r\ncontent-length:\s*(\d+)/.exec(text);
      // A 304 or 204 has no body, whatever length it names (RFC 9110 §8.6).
      const bodiless = c.head.status === 304 || c.head.status === 204;
      if (bodiless) c.chunked = false;
      c.left = c.chunked || bodiless || length === null ? 0 : Number(length[1]);
      c.close = text.includes('\r\nconnection: close');
      const keepAlive = /\r\nkeep-alive:[^\r]*timeout=(\d+)/.exec(text);
      c.keepAliveMs = keepAlive === null ? Infinity : Number(keepAlive[1]) * 1_000;
      data = data.subarray(end + 4);
    }
    if (c.chunked) {
      // Each chunk: its size in hex, CRLF, the bytes, CRLF; the last has size 0 (no trailers expected).
      if (c.left > 0) {
        const take = Math.min(c.left, data.length);
        c.left -= take;
        data = data.subarray(take);
        if (c.left > 0) return;
      }
      const line = data.indexOf('\r\n');
      if (line < 0) {
        c.buffered = data;
        return;
      }
      const size = Number.parseInt(data.toString('latin1', 0, line), 16);
      if (size === 0) {
        if (data.length < line + 4) {
          c.buffered = data;
          return;
        }
        data = data.subarray(line + 4);
      } else {
        c.left = size + 2;
        data = data.subarray(line + 2);
        continue;
      }
    } else {
      const take = Math.min(c.left, data.length);
      c.left -= take;
      data = data.subarray(take);
      if (c.left > 0) return;
    }
    done(c);
    if (data.length === 0 || c.head !== null) return;
  }
}

/** The answer on `c` is complete: counted, and the connection reused or ended. */
function done(c) {
  if (c.warming) {
    c.warming = false;
    busy.delete(c);
    c.head = null;
    c.idleUntil = performance.now() + c.keepAliveMs - KEEP_ALIVE_MARGIN_MS;
    idle.push(c);
    c.onWarm();
    return;
  }
  const latency = performance.now() - c.due;
  const { status, retryAfter } = c.head;
  if ((status >= 200 && status < 300) || status === 304) answered.push(latency);
  else if (status === 503) {
    shed.push(latency);
    if (retryAfter) shedWithRetryAfter += 1;
  } else otherStatuses[status] = (otherStatuses[status] ?? 0) + 1;
  busy.delete(c);
  if (c.close) c.socket.destroy();
  else {
    c.head = null;
    c.idleUntil = performance.now() + c.keepAliveMs - KEEP_ALIVE_MARGIN_MS;
    idle.push(c);
  }
  pump();
}

/** Sends the oldest due requests on the free connections (opening new ones up to `sockets`). */
function pump() {
  while (waitingHead < waiting.length) {
    let c = idle.pop();
    if (c !== undefined && c.idleUntil <= performance.now()) {
      c.socket.destroy();
      continue;
    }
    if (c === undefined) {
      if (open >= sockets) return;
      c = connect();
    }
    send(c, waiting[waitingHead]);
    waitingHead += 1;
    if (waitingHead > 4096 && waitingHead * 2 > waiting.length) {
      waiting.splice(0, waitingHead);
      waitingHead = 0;
    }
  }
}

/** The client's time-out, from when each request was due: dropped from the queue, or its connection destroyed. */
function expire(now) {
  while (waitingHead < waiting.length && waiting[waitingHead] + timeoutMs <= now) {
    waitingHead += 1;
    timedOut += 1;
  }
  for (const c of busy) {
    if (c.due + timeoutMs <= now) {
      busy.delete(c);
      timedOut += 1;
      c.socket.destroy();
    }
  }
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

/** `pid`'s CPU time (all its threads) in seconds; null once it is gone. */
function cpuSeconds() {
  const ticks = ownTicks(pid);
  return ticks === undefined ? null : ticks / CLOCK_TICKS;
}

function sampleRss() {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    if (match) rss.push(Math.round(Number(match[1]) / 1024));
  } catch {
    /* gone */
  }
}

// The connections open and warm before the clock starts, as a proxy's keep-alive pool is: each has been accepted
// and answered once (`GET /healthz`; a 404 from a peer does as well). Opened as the run went, a burst of them would
// queue at the server's accept, one a turn of its event loop, and the row would measure that.
await new Promise((resolve) => {
  let ready = 0;
  for (let i = 0; i < sockets; i += 1) {
    const c = connect();
    c.warming = true;
    c.socket.write(`GET /healthz HTTP/1.1\r\nhost: ${target.host}\r\n\r\n`);
    busy.add(c);
    c.due = performance.now();
    c.onWarm = () => {
      if (++ready === sockets) resolve();
    };
  }
});
const sampler = setInterval(() => {
  for (const path of probes) probe(path);
  sampleRss();
}, 100);
sampleRss();
const cpuBefore = cpuSeconds();
const total = Math.round(rate * durationSeconds);
const interval = 1_000 / rate;
const started = performance.now();
let sent = 0;
// The generator's own delay: how late each tick came (a busy generator sends and reads late, and says so).
const lags = [];
let lastTick = started;
// Every millisecond or so, every request due by now: timers are late on a busy machine, the schedule is not.
await new Promise((resolve) => {
  const tick = () => {
    const now = performance.now();
    lags.push(now - lastTick);
    lastTick = now;
    while (sent < total && started + sent * interval <= now) {
      waiting.push(started + sent * interval);
      sent += 1;
    }
    pump();
    expire(now);
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
    else {
      expire(performance.now());
      setTimeout(check, 10);
    }
  };
  check();
});
clearInterval(sampler);
const cpuAfter = cpuSeconds();
for (const c of idle) c.socket.destroy();
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
    generatorTickP99: quantile(lags, 0.99),
    generatorTickMax: quantile(lags, 1),
    cpuUsPerRequest:
      cpuBefore === null || cpuAfter === null ? null : Math.round(((cpuAfter - cpuBefore) * 1e6) / total),
    rssFirstMb: rss[0] ?? null,
    rssMaxMb: rss.length === 0 ? null : Math.max(...rss),
    rssLastMb: rss.at(-1) ?? null,
  })}\n`,
);
