/**
 * The processes of a bench run (contract §14): starting and stopping the
 * server, the ceiling and the peers, reading a process's peak RSS, and
 * running one load from bench/load.mjs (wrk, or autocannon when wrk is not
 * installed) with the CPU it costs the Node process and its PostgreSQL
 * backends.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { accessSync, closeSync, constants, openSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';

const ROOT = new URL('..', import.meta.url).pathname;

/** One load's result, as bench/load.mjs prints it. */
export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  errors: number;
  statusCodes: Record<string, number>;
  /** The Node process's CPU time (user + system) per completed request, in ms; null when not measured. */
  cpuMsPerRequest: number | null;
  /** Its PostgreSQL backends' CPU time per completed request, in ms; absent or null when not measured. */
  pgCpuMsPerRequest?: number | null;
  /** How many backends were counted, and how many disconnected during the run (their CPU lost). */
  pgBackends?: number;
  pgBackendsLost?: number;
}

/** What to load and whose CPU it costs: the process `pid` (and its children) and the backends of `application`. */
export interface Target {
  url: string;
  pid: number;
  /** The application_name of its database connections; none for the ceiling. */
  application?: string;
}

export type Load = (target: Target, scenario: Record<string, unknown>) => Promise<LoadResult>;

export interface Started {
  child: ChildProcess;
  match: RegExpExecArray;
}

/** `wrk` when it is on PATH (or BENCH_LOAD says so), else autocannon, saying why. */
export function loadTool(): 'wrk' | 'autocannon' {
  const wanted = process.env.BENCH_LOAD;
  if (wanted === 'autocannon') return 'autocannon';
  const onPath = (process.env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, 'wrk'), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
  if (onPath) return 'wrk';
  process.stderr.write(
    `bench: ${wanted === 'wrk' ? 'BENCH_LOAD=wrk, but ' : ''}wrk is not installed: using autocannon, which takes ` +
      `more of the machine's CPU ` +
      '(figures are lower than with wrk; install it with `apt-get install wrk` or `brew install wrk`)\n',
  );
  return 'autocannon';
}

/**
 * Starts a node process and waits for `ready` on `stream`. `stdoutFile`: the
 * child's stdout goes to that file instead (the server's request log).
 */
export function startProcess(
  args: string[],
  extraEnv: NodeJS.ProcessEnv,
  ready: RegExp,
  stream: 'stdout' | 'stderr',
  stdoutFile?: string,
): Promise<Started> {
  const fd = stdoutFile === undefined ? undefined : openSync(stdoutFile, 'w');
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...extraEnv },
    stdio: ['ignore', fd ?? 'pipe', 'pipe'],
  });
  if (fd !== undefined) closeSync(fd);
  let text = '';
  return new Promise((resolve, reject) => {
    child[stream]!.on('data', (d: Buffer) => {
      text += d.toString();
      const match = ready.exec(text);
      if (match) resolve({ child, match });
    });
    (stream === 'stdout' ? child.stderr : child.stdout)?.resume();
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}: ${text}`)));
  });
}

export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

/** The node flags of a built program's `#!` line (scripts/build.mjs), to start it with the node running the bench. */
export function shebangFlags(file: string): string[] {
  const line = readFileSync(file, 'utf8').split('\n', 1)[0] as string;
  return (/^#!.*?\bnode\b(.*)$/.exec(line)?.[1] ?? '').trim().split(/\s+/).filter(Boolean);
}

/** Peak resident set (VmHWM) of a process and its children, in MB. */
export function peakRss(pid: number): number {
  const pids = [pid];
  try {
    pids.push(
      ...readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number),
    );
  } catch {
    /* no children */
  }
  let total = 0;
  for (const p of pids) {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, 'utf8'));
    total += match ? Number(match[1]) : 0;
  }
  return Math.round(total / 1024);
}

/**
 * Runs one scenario from bench/load.mjs with `tool`, charging CPU to the
 * target's process (and its children) and, on a real server
 * (`databaseUrl`), to the PostgreSQL backends of its application_name.
 */
export const loader =
  (tool: 'wrk' | 'autocannon', settings: Record<string, unknown>, databaseUrl: string | undefined): Load =>
  async (target, scenario) => {
    const pg =
      databaseUrl === undefined || target.application === undefined
        ? {}
        : { pg: { databaseUrl, applicationName: target.application } };
    const child = spawn(
      process.execPath,
      [
        'bench/load.mjs',
        JSON.stringify({ tool, url: target.url, headers: {}, cpuPids: [target.pid], ...settings, ...pg, ...scenario }),
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const [code] = await once(child, 'exit');
    if (code !== 0) throw new Error(`load generator exited with ${code}`);
    return JSON.parse(out) as LoadResult;
  };

/** The peers of contract §14: one script each around bench/peers/common.mjs. */
export const PEERS = [
  { id: 'fastify', label: 'Fastify 5', script: 'bench/peers/fastify.mjs' },
  { id: 'hono', label: 'Hono 4', script: 'bench/peers/hono.mjs' },
].filter((p) => (process.env.BENCH_PEERS ?? 'fastify,hono').split(',').includes(p.id));

export interface Peer extends Target {
  id: string;
  label: string;
  child: ChildProcess;
  /** The driver it loaded, as it says when listening. */
  driver: string;
}

/** Starts the peers of BENCH_PEERS, each on a port of its own, on `peerDatabaseUrl`. */
export async function startPeers(peerDatabaseUrl: string): Promise<Peer[]> {
  const peers: Peer[] = [];
  // One after the other: the first creates the peer_* tables both use.
  for (const p of PEERS) {
    const { child, match } = await startProcess(
      [p.script],
      { PORT: '0', DATABASE_URL: peerDatabaseUrl },
      /listening on (http:\/\/\S+) \(driver: (.*)\)\n/,
      'stdout',
    );
    peers.push({
      ...p,
      child,
      url: match[1] as string,
      pid: child.pid as number,
      application: `bench-peer-${p.id}`,
      driver: match[2] as string,
    });
  }
  return peers;
}
