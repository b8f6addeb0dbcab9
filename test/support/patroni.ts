/**
 * A private high-availability PostgreSQL for the failover test, as
 * docs/operations.md ("High availability") deploys it: etcd 3.4, two nodes
 * of PostgreSQL 15 under Patroni 3.0 (Debian's packages) in synchronous
 * mode, and HAProxy routing to the leader by Patroni's `GET /primary`.
 * Every file is the documented one (test/fixtures/patroni.yml.template,
 * haproxy-ha.cfg.template) with its addresses, paths and timings replaced
 * and trust instead of passwords. Everything runs in a temporary folder on
 * free loopback ports, as the postgres user (PostgreSQL refuses root).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findProgram, freePort, until, untilListening } from './tools.ts';

const FIXTURES = new URL('../fixtures/', import.meta.url);
const PATRONI = findProgram(['patroni', '/usr/bin/patroni'], ['--version']);
const ETCD = findProgram(['etcd', '/usr/bin/etcd'], ['--version']);
const HAPROXY = findProgram(['haproxy', '/usr/sbin/haproxy'], ['-v']);
const PG_BIN = spawnSync('sh', ['-c', 'ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1'])
  .stdout.toString()
  .trim();

/** Why the failover test cannot run here, or `false`. */
export const HA_MISSING =
  (PATRONI === undefined || ETCD === undefined || HAPROXY === undefined) &&
  'patroni, etcd-server or haproxy is not installed (Debian: apt-get install patroni etcd-server haproxy); ' +
    'CI installs them';

export interface HaNode {
  readonly name: string;
  readonly pgPort: number;
  readonly restPort: number;
}

export interface HaCluster {
  /** `postgres://postgres@127.0.0.1:<HAProxy's primary port>/orders`: the service's `DATABASE_URL`. */
  readonly url: string;
  /** The same database on node `name`, straight. */
  urlOf(name: string): string;
  readonly nodes: readonly HaNode[];
  /** The node Patroni's `GET /primary` answers 200 on now, if one. */
  primary(): Promise<string | undefined>;
  /**
   * Crashes node `name` as a machine dies: PostgreSQL and Patroni killed (SIGKILL), and the leader key it held
   * deleted from etcd, as its expiry would after `ttl`, so the other node takes over at its next loop.
   */
  crash(name: string): Promise<void>;
  /** Whether HAProxy routes to node `name` now (its server in the primary listener is UP). */
  routes(name: string): Promise<boolean>;
  /** Starts node `name` again (after a crash): it rejoins as a standby (pg_rewind), synchronous once this resolves. */
  rejoin(name: string): Promise<void>;
  stop(): Promise<void>;
}

const asPostgres = (command: string, args: readonly string[]): [string, string[]] =>
  process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, [...args]];

/** Starts the cluster: etcd, node1 (the leader), node2 (its synchronous standby), HAProxy; the database `orders`. */
export async function startHaCluster(): Promise<HaCluster> {
  assert.ok(!HA_MISSING, String(HA_MISSING));
  const dir = mkdtempSync(join(tmpdir(), 'orders-ha-'));
  chmodSync(dir, 0o755);
  const children: ChildProcess[] = [];
  const logs = new Map<string, string>();
  const run = (name: string, command: string, args: readonly string[]) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: dir });
    logs.set(name, '');
    const keep = (chunk: Buffer) => logs.set(name, ((logs.get(name) ?? '') + chunk.toString()).slice(-20_000));
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    children.push(child);
    return child;
  };
  const why = () => [...logs].map(([name, text]) => `--- ${name}\n${text.slice(-3_000)}`).join('\n');
  const scope = `orders-test-${process.pid}`;

  const [etcdPort, etcdPeer] = [await freePort(), await freePort()];
  const etcd = run('etcd', ETCD as string, [
    '--name=ha',
    `--data-dir=${join(dir, 'etcd')}`,
    `--listen-client-urls=http://127.0.0.1:${etcdPort}`,
    `--advertise-client-urls=http://127.0.0.1:${etcdPort}`,
    `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
    `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
    `--initial-cluster=ha=http://127.0.0.1:${etcdPeer}`,
  ]);
  await untilListening(etcdPort, () => etcd.exitCode !== null, why);

  const nodes: HaNode[] = [];
  for (const name of ['node1', 'node2']) nodes.push({ name, pgPort: await freePort(), restPort: await freePort() });
  const template = readFileSync(new URL('patroni.yml.template', FIXTURES), 'utf8');
  const patroni = new Map<string, ChildProcess>();
  const startNode = (node: HaNode) => {
    const home = join(dir, node.name);
    mkdirSync(home, { recursive: true });
    const config = template
      .replace('scope: orders', `scope: ${scope}`)
      .replace('name: node1', `name: ${node.name}`)
      .replaceAll('10.0.0.21:8008', `127.0.0.1:${node.restPort}`)
      .replace('hosts: 10.0.0.31:2379', `hosts: 127.0.0.1:${etcdPort}`)
      .replaceAll('10.0.0.21:5432', `127.0.0.1:${node.pgPort}`)
      .replaceAll('10.0.0.0/24 scram-sha-256', '127.0.0.1/32 trust')
      .replace('/var/lib/postgresql/15/orders.pgpass', join(home, 'pgpass'))
      .replace('/var/lib/postgresql/15/orders', join(home, 'data'))
      .replace('/usr/lib/postgresql/15/bin', PG_BIN)
      .replace('/var/run/postgresql', home)
      // A small server: the suite runs beside it.
      .replace('max_connections: 200', "max_connections: 100\n        shared_buffers: '16MB'\n        fsync: 'off'");
    writeFileSync(join(home, 'patroni.yml'), config);
    if (process.getuid?.() === 0) spawnSync('chown', ['-R', 'postgres:', home]);
    const [command, args] = asPostgres(PATRONI as string, [join(home, 'patroni.yml')]);
    patroni.set(node.name, run(node.name, command, args));
  };
  const rest = (node: HaNode, path: string) =>
    fetch(`http://127.0.0.1:${node.restPort}${path}`, { signal: AbortSignal.timeout(1_000) }).then(
      (r) => r.status,
      () => 0,
    );

  const [node1, node2] = nodes as [HaNode, HaNode];
  startNode(node1);
  await until(
    async () => (await rest(node1, '/primary')) === 200,
    () => `node1 never led:\n${why()}`,
    60_000,
  );
  startNode(node2);
  // The standby streams, and is the synchronous one.
  await until(
    async () => (await rest(node2, '/sync')) === 200,
    () => `node2 never became synchronous:\n${why()}`,
    60_000,
  );

  const [proxyPort, statsPort] = [await freePort(), await freePort()];
  let cfg = readFileSync(new URL('haproxy-ha.cfg.template', FIXTURES), 'utf8')
    .replace('    log stdout format raw local0\n', '')
    .replace('bind :5000', `bind 127.0.0.1:${proxyPort}`)
    .replace('bind :5001', `bind 127.0.0.1:${await freePort()}`)
    .replaceAll('inter 1s', 'inter 200ms');
  for (const node of nodes) {
    const server = node.name === 'node1' ? '10.0.0.21' : '10.0.0.22';
    cfg = cfg.replaceAll(
      `${server}:5432 maxconn 100 check port 8008`,
      `127.0.0.1:${node.pgPort} maxconn 100 check port ${node.restPort}`,
    );
  }
  cfg += `\nlisten stats\n    mode http\n    bind 127.0.0.1:${statsPort}\n    stats enable\n    stats uri /stats\n`;
  writeFileSync(join(dir, 'haproxy.cfg'), cfg);
  const haproxy = run('haproxy', HAPROXY as string, ['-db', '-f', join(dir, 'haproxy.cfg')]);
  await untilListening(proxyPort, () => haproxy.exitCode !== null, why);

  const direct = (node: HaNode) => `postgres://postgres@127.0.0.1:${node.pgPort}/orders`;
  const psql = (node: HaNode, sql: string) =>
    spawnSync(join(PG_BIN, 'psql'), [
      '-h',
      '127.0.0.1',
      '-p',
      String(node.pgPort),
      '-U',
      'postgres',
      '-d',
      'postgres',
      '-qc',
      sql,
    ]);
  const created = psql(node1, 'CREATE DATABASE orders');
  assert.equal(created.status, 0, created.stderr.toString());

  const routes = async (name: string) => {
    const csv = await (await fetch(`http://127.0.0.1:${statsPort}/stats;csv`)).text();
    return csv.split('\n').some((line) => line.startsWith(`primary,${name},`) && line.split(',')[17] === 'UP');
  };
  await until(
    () => routes('node1'),
    () => `HAProxy never routed to node1:\n${why()}`,
    10_000,
  );

  return {
    url: `postgres://postgres@127.0.0.1:${proxyPort}/orders`,
    urlOf: (name) => direct(nodes.find((n) => n.name === name) as HaNode),
    nodes,
    async primary() {
      for (const node of nodes) if ((await rest(node, '/primary')) === 200) return node.name;
      return undefined;
    },
    async crash(name) {
      const pid = Number(readFileSync(join(dir, name, 'data', 'postmaster.pid'), 'utf8').split('\n', 1)[0]);
      process.kill(pid, 'SIGKILL');
      patroni.get(name)?.kill('SIGKILL');
      spawnSync('pkill', ['-KILL', '-f', join(dir, name, 'patroni.yml')]);
      // The leader key, as its ttl would let it expire (etcd's v3 gateway: keys in base64).
      const key = Buffer.from(`/service/${scope}/leader`).toString('base64');
      await fetch(`http://127.0.0.1:${etcdPort}/v3/kv/deleterange`, { method: 'POST', body: JSON.stringify({ key }) });
    },
    routes,
    async rejoin(name) {
      const node = nodes.find((n) => n.name === name) as HaNode;
      startNode(node);
      await until(
        async () => (await rest(node, '/sync')) === 200,
        () => `${name} never rejoined:\n${why()}`,
        60_000,
      );
    },
    async stop() {
      const running = children.reverse().filter((child) => child.exitCode === null && child.signalCode === null);
      const exited = running.map((child) => new Promise((resolve) => child.once('exit', resolve)));
      for (const child of running) child.kill('SIGTERM');
      // Patroni stops its PostgreSQL first; then make sure.
      await Promise.all(exited);
      for (const node of nodes) {
        const data = join(dir, node.name, 'data');
        const [command, args] = asPostgres(join(PG_BIN, 'pg_ctl'), ['stop', '-D', data, '-m', 'immediate', '-s']);
        spawnSync(command, args);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
