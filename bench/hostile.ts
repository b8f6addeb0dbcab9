/**
 * `make bench-hostile`: what the attacks of contract §11 cost the built
 * server (docs/record/performance.md, "Hostile input"). Starts `PROGRAM` (default
 * dist/orders.mjs) on `DATABASE_URL` (a database of its own on that server,
 * dropped after) or, unset, an in-memory embedded database, and prints, per
 * attack, the answers, the server's resident memory before and at its peak,
 * its CPU time, and the slowest GET /healthz of another client meanwhile.
 * The tests of test/ops/hostile-connections.test.ts assert bounds on the same
 * figures; this prints them, to compare two builds.
 */
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { dirname, resolve } from 'node:path';
import { promisify } from 'node:util';
import postgres from 'postgres';
import {
  bodyParts,
  idleConnections,
  oneByteChunks,
  pollHealth,
  processFigures,
  rawExchange,
  requestHead,
  resetPeak,
  tally,
  type Outcome,
  type Target,
} from '../test/support/attacks.ts';
import { startService, type ServiceProcess } from '../test/support/process.ts';

const run = promisify(execFile);
const program = resolve(process.env.PROGRAM ?? 'dist/orders.mjs');
const MIB = 1_048_576;

interface Started {
  readonly service: ServiceProcess;
  readonly target: Target;
  readonly token: string;
  stop(): Promise<void>;
}

/** The program on a database of its own, with an admin token; `ulimit -n` set when given. */
async function start(databaseUrl: string | undefined, fdLimit?: number): Promise<Started> {
  const env: Record<string, string> = { LOG_LEVEL: 'warn', DATABASE_URL: databaseUrl ?? 'memory:' };
  // HOSTILE_NODE_FLAGS: node's flags for the server (--cpu-prof, to see where an attack's time goes).
  const flags = (process.env.HOSTILE_NODE_FLAGS ?? '').split(' ').filter((flag) => flag !== '');
  const node = [process.execPath, ...flags, program].map((part) => JSON.stringify(part)).join(' ');
  const command =
    fdLimit === undefined
      ? [process.execPath, ...flags, program]
      : ['sh', '-c', `ulimit -n ${fdLimit} && exec ${node}`];
  const service = await startService(env, undefined, undefined, command);
  let token = /admin: +(ord_\S+)/.exec(service.stderr())?.[1];
  if (token === undefined) {
    const cli = (...args: string[]) =>
      run(process.execPath, [program, ...args], { cwd: dirname(dirname(program)), env: { ...process.env, ...env } });
    const user = JSON.parse(
      (await cli('user', 'create', '--email', `h${Date.now()}@example.test`, '--name', 'H', '--role', 'admin')).stdout,
    ) as { id: number };
    token = (
      await cli('token', 'create', '--user', String(user.id), '--scopes', 'orders:write,orders:read')
    ).stdout.trim();
  }
  const url = new URL(service.url);
  return {
    service,
    target: { host: url.hostname, port: Number(url.port) },
    token,
    async stop() {
      service.process.kill('SIGTERM');
      await once(service.process, 'exit');
    },
  };
}

/** A database of its own on the server of `DATABASE_URL`, migrated and seeded by the program; or none. */
async function database(): Promise<{ url: string | undefined; drop(): Promise<void> }> {
  const server = process.env.DATABASE_URL;
  if (server === undefined || server === '' || server === 'memory:') return { url: undefined, drop: async () => {} };
  const name = `orders_hostile_${process.pid}`;
  const admin = postgres(server, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  const env = { ...process.env, DATABASE_URL: url.toString() };
  await run(process.execPath, [program, 'migrate'], { cwd: dirname(dirname(program)), env });
  await run(process.execPath, [program, 'seed'], { cwd: dirname(dirname(program)), env });
  return {
    url: url.toString(),
    async drop() {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

interface Row {
  attack: string;
  answers: string;
  rssMb: string;
  cpuMs: number;
  healthzMs: string;
}

/** Runs `attack` against `s`, with /healthz polled from another address meanwhile. */
async function measure(s: Started, name: string, attack: () => Promise<Outcome[]>): Promise<Row> {
  const pid = s.service.process.pid as number;
  await new Promise((r) => setTimeout(r, 500));
  resetPeak(pid);
  const before = processFigures(pid);
  const attacking = attack();
  const health = pollHealth({ ...s.target, localAddress: '127.0.0.2' }, attacking);
  const outcomes = await attacking;
  const polls = await health;
  const after = processFigures(pid);
  const mb = (b: number) => (b / 1e6).toFixed(0);
  return {
    attack: name,
    answers: JSON.stringify(tally(outcomes)),
    rssMb: `${mb(before.rssBytes)} → ${mb(after.peakBytes)}`,
    cpuMs: Math.round(after.cpuMs - before.cpuMs),
    healthzMs: `${polls.slowestMs.toFixed(0)} (${polls.failed} failed)`,
  };
}

const orders = (fields: string[]) => requestHead('POST', '/v1/orders', ['Content-Type: application/json', ...fields]);
const large = `Content-Length: ${MIB}`;
const chunked = 'Transfer-Encoding: chunked';
const bearer = (s: Started) => `Authorization: Bearer ${s.token}`;

/** `count` exchanges at once from `localAddress`, each `head` and a body of `bytes` bytes. */
const many = (count: number, head: string, bytes: number, localAddress: string) => (s: Started) =>
  Promise.all(Array.from({ length: count }, () => rawExchange({ ...s.target, localAddress }, head, bodyParts(bytes))));

/** One exchange from `localAddress`: `head`, then 1 MB in one-byte chunks. */
const chopped = (head: string, localAddress: string) => async (s: Started) => [
  await rawExchange({ ...s.target, localAddress }, head, oneByteChunks(1_000_000)),
];

/** 300 connections from one address that send nothing, held 2 s: how many stayed open. */
const idle = async (s: Started): Promise<Outcome[]> => {
  const sockets = await idleConnections({ ...s.target, localAddress: '127.0.0.3' }, 300);
  await new Promise((r) => setTimeout(r, 2_000));
  const open = sockets.filter((socket) => !socket.destroyed).length;
  for (const socket of sockets) socket.destroy();
  return Array.from({ length: 300 }, (_, i): Outcome => (i < open ? 0 : 'closed'));
};

const db = await database();
const rows: Row[] = [];
let s: Started | undefined;
try {
  // Each attack on a server of its own, from an address of its own: none inherits another's memory or limits.
  const attacks: [string, (s: Started) => Promise<Outcome[]>, number?][] = [
    ['300 × 1 MiB, no token', (s) => many(300, orders([large]), MIB, '127.0.0.10')(s)],
    ['900 × 1 MiB, no token', (s) => many(900, orders([large]), MIB, '127.0.0.11')(s)],
    ['300 × 1 MiB, a valid token', (s) => many(300, orders([large, bearer(s)]), MIB, '127.0.0.12')(s)],
    ['1 MB in one-byte chunks, no token', (s) => chopped(orders([chunked]), '127.0.0.13')(s)],
    ['1 MB in one-byte chunks, a valid token', (s) => chopped(orders([chunked, bearer(s)]), '127.0.0.14')(s)],
    ['300 idle connections, ulimit -n 256', idle, 256],
  ];
  for (const [name, attack, fdLimit] of attacks) {
    if (process.env.ATTACKS !== undefined && !process.env.ATTACKS.split('|').includes(name)) continue;
    s = await start(db.url, fdLimit);
    const started = s;
    rows.push(await measure(started, name, () => attack(started)));
    await s.stop();
  }
} finally {
  if (s !== undefined && s.service.process.exitCode === null) s.service.process.kill('SIGKILL');
  await db.drop();
}
console.log(`program: ${program}; database: ${db.url === undefined ? 'embedded (memory:)' : 'PostgreSQL'}`);
console.table(rows);
