/**
 * The attacks of contract §11 as an outside client makes them, over raw
 * sockets (a client library would refuse to send most of them): many large
 * bodies at once, one body in one-byte chunks, connections that never send a
 * request. And what they cost the server process, read from /proc: its
 * resident memory (peak, since a reset) and its CPU time. Used by the tests
 * of test/ops/hostile-connections.test.ts and by `make bench-hostile`.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { Worker } from 'node:worker_threads';

/** What a process holds and has spent. */
export interface ProcessFigures {
  /** Resident memory now. */
  readonly rssBytes: number;
  /** The peak of resident memory since the process started or `resetPeak()`. */
  readonly peakBytes: number;
  /** User and system CPU time since the process started. */
  readonly cpuMs: number;
}

const TICKS_PER_SECOND = Number(spawnSync('getconf', ['CLK_TCK']).stdout?.toString().trim()) || 100;

/** `pid`'s memory and CPU time, from /proc (Linux). */
export function processFigures(pid: number): ProcessFigures {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  // /proc/<pid>/stat: the 14th and 15th fields (utime, stime) after the command's parenthesis.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return { rssBytes: kb('VmRSS'), peakBytes: kb('VmHWM'), cpuMs: (ticks * 1000) / TICKS_PER_SECOND };
}

/** Resets `pid`'s peak of resident memory to what it holds now (Linux 4.0: `5` into clear_refs). */
export function resetPeak(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

/** Where the server listens, and the client address to connect from (any of 127.0.0.0/8 on Linux). */
export interface Target {
  readonly host: string;
  readonly port: number;
  readonly localAddress?: string;
}

/** How one raw exchange ended: the status of the answer's head, or `closed` when none came. */
export type Outcome = number | 'closed';

/**
 * Opens a connection to `target`, writes `head` then each part of `body` (waiting for the socket to drain
 * between parts), and resolves with the status of the first answer, or `closed` if the connection ended
 * without one. The connection is closed once the answer's head arrived, or after `ms`.
 */
export function rawExchange(target: Target, head: string, body: Iterable<Buffer> = [], ms = 30_000): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = connect({ host: target.host, port: target.port, localAddress: target.localAddress });
    let received = '';
    let done = false;
    const finish = (outcome: Outcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(() => finish('closed'), ms);
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      const status = /^HTTP\/1\.1 (\d{3}) /.exec(received);
      // A 100 Continue is not the answer.
      if (status !== null && status[1] !== '100') finish(Number(status[1]));
      else if (status?.[1] === '100' && received.includes('\r\n\r\n')) {
        received = received.slice(received.indexOf('\r\n\r\n') + 4);
      }
    });
    socket.on('error', () => finish('closed'));
    socket.on('close', () => finish('closed'));
    socket.on('connect', async () => {
      socket.write(head);
      for (const part of body) {
        if (done || socket.destroyed) return;
        if (!socket.write(part)) await new Promise((r) => socket.once('drain', r).once('close', r));
      }
    });
  });
}

/** The head of a `method` request of `path` with `fields` (each `name: value`). */
export function requestHead(method: string, path: string, fields: readonly string[]): string {
  return `${method} ${path} HTTP/1.1\r\nHost: orders.test\r\n${fields.map((f) => `${f}\r\n`).join('')}\r\n`;
}

/** A body of `bytes` bytes, as parts of at most 64 KiB. */
export function* bodyParts(bytes: number, fill = 0x20): Iterable<Buffer> {
  const part = Buffer.alloc(Math.min(bytes, 65_536), fill);
  for (let sent = 0; sent < bytes; sent += part.length) yield part.subarray(0, Math.min(part.length, bytes - sent));
}

/**
 * A body of `bytes` bytes in the chunked coding, one byte per chunk (`1\r\nX\r\n`: six bytes on the wire
 * for each byte of content), then the last chunk; as parts of about 60 KiB.
 */
export function* oneByteChunks(bytes: number): Iterable<Buffer> {
  const perPart = 10_000;
  const part = Buffer.from('1\r\n \r\n'.repeat(perPart), 'latin1');
  for (let sent = 0; sent < bytes; sent += perPart) yield part.subarray(0, Math.min(perPart, bytes - sent) * 6);
  yield Buffer.from('0\r\n\r\n', 'latin1');
}

/** Connections from `target.localAddress` that never send anything; resolves once each is open or refused. */
export async function idleConnections(target: Target, count: number): Promise<Socket[]> {
  const sockets = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<Socket>((resolve) => {
          const socket = connect({ host: target.host, port: target.port, localAddress: target.localAddress });
          socket.once('connect', () => resolve(socket));
          socket.once('error', () => resolve(socket));
        }),
    ),
  );
  for (const socket of sockets) socket.on('error', () => {});
  return sockets;
}

/** How GET /healthz answered while it was polled. */
export interface HealthPolls {
  /** The slowest answer, in ms (a failure counts as its time to fail). */
  readonly slowestMs: number;
  readonly answered: number;
  /** Polls that got no 200: the connection refused, reset or timed out. */
  readonly failed: number;
}

/**
 * Polls GET /healthz on `target`, each on a new connection, one after the other, until `stop` resolves;
 * each poll waits at most `timeoutMs`. The polls run in a thread of their own, so that the attacker's work in
 * this thread (writing megabytes to hundreds of sockets) does not delay them: what they measure is the server.
 */
export async function pollHealth(target: Target, stop: Promise<unknown>, timeoutMs = 5_000): Promise<HealthPolls> {
  const worker = new Worker(POLLER, { eval: true, workerData: { target, timeoutMs } });
  const result = new Promise<HealthPolls>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await stop.catch(() => {});
  worker.postMessage('stop');
  const polls = await result;
  await worker.terminate();
  return polls;
}

/** The poller's thread: plain JavaScript, as `new Worker(…, { eval: true })` runs it. */
const POLLER = `
const { parentPort, workerData } = require('node:worker_threads');
const { request } = require('node:http');
const { target, timeoutMs } = workerData;
let stopped = false;
parentPort.once('message', () => { stopped = true; });
const poll = () => new Promise((resolve) => {
  const req = request({ host: target.host, port: target.port, localAddress: target.localAddress, path: '/healthz',
    agent: false }, (res) => {
    res.resume();
    res.on('end', () => resolve(res.statusCode === 200));
    res.on('error', () => resolve(false));
  });
  req.setTimeout(timeoutMs, () => req.destroy());
  req.on('error', () => resolve(false));
  req.end();
});
(async () => {
  let slowestMs = 0, answered = 0, failed = 0;
  while (!stopped) {
    const started = performance.now();
    const ok = await poll();
    slowestMs = Math.max(slowestMs, performance.now() - started);
    if (ok) answered += 1; else failed += 1;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  parentPort.postMessage({ slowestMs, answered, failed });
})();
`;

/** How many of `outcomes` are each status (or `closed`), as `{ "401": 300 }`. */
export function tally(outcomes: readonly Outcome[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const outcome of outcomes) counts[String(outcome)] = (counts[String(outcome)] ?? 0) + 1;
  return counts;
}
