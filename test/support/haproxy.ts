/**
 * A private HAProxy (Debian's 2.6) on a free loopback port, in front of the
 * service's processes, started with the configuration docs/operations.md
 * gives (test/fixtures/haproxy.cfg.template: round robin among the processes
 * ready by `GET /readyz`, or the live ones by `GET /healthz` when none is),
 * its addresses replaced and its checks every 100 ms instead of 2 s (50 ms
 * instead of 500 during a change); plus a stats page, from which a test reads
 * each backend's state.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findProgram, freePort, untilListening } from './tools.ts';

export const HAPROXY_TEMPLATE = readFileSync(new URL('../fixtures/haproxy.cfg.template', import.meta.url), 'utf8');

/** haproxy on PATH, or where Debian puts it. */
export const HAPROXY = findProgram(['haproxy', '/usr/sbin/haproxy'], ['-v']);
export const HAPROXY_MISSING =
  HAPROXY === undefined && 'haproxy is not installed (Debian: apt-get install haproxy); CI installs it';

/** How often HAProxy checks each backend here (2 s in the documented configuration). */
export const CHECK_INTERVAL_MS = 100;

export interface Haproxy {
  /** `http://127.0.0.1:<port>`: the service as its clients reach it. */
  readonly url: string;
  /**
   * Each server's state as HAProxy sees it now in backend `backend` (`orders`, the ready ones; `orders_live`): `UP`,
   * `DOWN`, `UP 1/2`… by server name (orders1, orders2).
   */
  states(backend?: string): Promise<Record<string, string>>;
  /** What it printed: its request log (`option httplog`) among it. */
  log(): string;
  stop(): Promise<void>;
}

/**
 * HAProxy in front of `backends` (the service's processes: `http://127.0.0.1:port`), named orders1, orders2…;
 * `changes`: more replacements of the documented text, each of a piece it holds once (a shorter time-out, say).
 */
export async function startHaproxy(
  backends: readonly string[],
  changes: readonly [string, string][] = [],
): Promise<Haproxy> {
  assert.ok(HAPROXY, 'haproxy is not installed');
  const dir = mkdtempSync(join(tmpdir(), 'orders-haproxy-'));
  const [port, statsPort] = [await freePort(), await freePort()];
  const replace = (text: string, from: string, to: string) => {
    assert.equal(text.split(from).length, 2, `the template holds ${from} exactly once`);
    return text.replace(from, to);
  };
  let cfg = replace(HAPROXY_TEMPLATE, 'bind :80', `bind 127.0.0.1:${port}`);
  // In both backends: the ready ones and the live ones.
  cfg = cfg.replaceAll(' inter 2s ', ` inter ${CHECK_INTERVAL_MS}ms `).replace('fastinter 500ms', 'fastinter 50ms');
  for (const [from, to] of changes) cfg = replace(cfg, from, to);
  const servers = backends.map((url, i) => `    server orders${i + 1} ${new URL(url).host} check`).join('\n');
  cfg = cfg.replaceAll('    server orders1 10.0.0.11:3000 check\n    server orders2 10.0.0.12:3000 check', servers);
  cfg += `\nfrontend stats\n    bind 127.0.0.1:${statsPort}\n    stats enable\n    stats uri /stats\n`;
  writeFileSync(join(dir, 'haproxy.cfg'), cfg);
  const child = spawn(HAPROXY, ['-db', '-f', join(dir, 'haproxy.cfg')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await untilListening(
    port,
    () => child.exitCode !== null,
    () => output,
  );
  return {
    url: `http://127.0.0.1:${port}`,
    async states(backend = 'orders') {
      const csv = await (await fetch(`http://127.0.0.1:${statsPort}/stats;csv`)).text();
      const [header, ...rows] = csv.replace(/^# /, '').trim().split('\n');
      const columns = (header as string).split(',');
      const [proxy, server, status] = ['pxname', 'svname', 'status'].map((name) => columns.indexOf(name));
      const states: Record<string, string> = {};
      for (const row of rows) {
        const cells = row.split(',');
        if (cells[proxy as number] === backend && /^orders\d+$/.test(cells[server as number] as string))
          states[cells[server as number] as string] = cells[status as number] as string;
      }
      return states;
    },
    log: () => output,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
