/**
 * The outside programs some tests drive (PgBouncer, HAProxy, Redis), found on
 * PATH or where Debian puts them, and the small helpers every such test needs.
 */
import { type ChildProcess, spawnSync } from 'node:child_process';
import { createConnection, createServer, type AddressInfo } from 'node:net';
import { slack } from './time.ts';

/** The first of `candidates` that runs with `args`, or `undefined`. */
export function findProgram(candidates: readonly string[], args: readonly string[]): string | undefined {
  return candidates.find((bin) => spawnSync(bin, args).error === undefined);
}

/** A TCP port free on 127.0.0.1 now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Whether something accepts a TCP connection on 127.0.0.1:`port`. */
export function accepts(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

/**
 * Resolves once `port` accepts connections; rejects with `why()` when
 * `exited()` says the program died first, or after `ms`.
 */
export async function untilListening(
  port: number,
  exited: () => boolean,
  why: () => string,
  ms = 10_000,
): Promise<void> {
  for (const deadline = Date.now() + ms; ; ) {
    if (exited()) throw new Error(`exited before listening on ${port}: ${why()}`);
    if (await accepts(port)) return;
    if (Date.now() > deadline) throw new Error(`not listening on ${port} within ${ms} ms: ${why()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Resolves once `done()` resolves true, asking every 20 ms; rejects with `why()` after `ms` times TIME_SLACK. */
export async function until(done: () => Promise<boolean>, why: () => string, ms = 10_000): Promise<void> {
  for (const deadline = Date.now() + slack(ms); ; ) {
    if (await done()) return;
    if (Date.now() > deadline) throw new Error(why());
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The programs a test starts, each one's last output kept under its name, told on failure by `why()`. */
export function programOutputs(tail: number) {
  const children: ChildProcess[] = [];
  const logs = new Map<string, string>();
  return {
    children,
    /** Keeps the last 20,000 characters `child` writes, under `name`; gives `child` back. */
    keep(name: string, child: ChildProcess): ChildProcess {
      logs.set(name, '');
      const add = (chunk: Buffer) => logs.set(name, ((logs.get(name) ?? '') + chunk.toString()).slice(-20_000));
      child.stdout?.on('data', add);
      child.stderr?.on('data', add);
      children.push(child);
      return child;
    },
    /** The last `tail` characters of each program's output. */
    why: () => [...logs].map(([name, text]) => `--- ${name}\n${text.slice(-tail)}`).join('\n'),
  };
}

/** The `NAME=value` lines of an environment file (`/etc/default/etcd`), as an environment. */
export function environmentOf(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .split('\n')
      .filter((line) => /^[A-Z_]+=/.test(line))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
}
