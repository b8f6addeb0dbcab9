/**
 * A private high-availability PostgreSQL for the failover test, as
 * docs/operations.md ("High availability") deploys it: etcd 3.4, two nodes
 * of PostgreSQL 15 under Patroni 3.0 (Debian's packages) in synchronous
 * mode, and HAProxy routing to the leader by Patroni's `GET /primary`.
 * Every file is the documented one, followed as printed (test/fixtures/:
 * etcd.env.template, patroni.yml.template with its pg_hba and SCRAM
 * passwords, ha-database.sh for the service's role and database,
 * haproxy-ha.cfg.template) with only its addresses, ports and paths
 * replaced. Everything runs in a temporary folder on free loopback ports, as
 * the postgres user (PostgreSQL refuses root).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { environmentOf, findProgram, freePort, programOutputs, until, untilListening } from './tools.ts';

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
  /**
   * `postgres://orders:<password, percent-encoded>@127.0.0.1:<HAProxy's primary port>/orders`: the service's
   * `DATABASE_URL`, as ha-database.sh printed it.
   */
  readonly url: string;
  /** The password of the service's role (it holds characters a URL must encode). */
  readonly password: string;
  /** The same database on node `name`, straight. */
  urlOf(name: string): string;
  readonly nodes: readonly HaNode[];
  /** The node Patroni's `GET /primary` answers 200 on now, if one. */
  primary(): Promise<string | undefined>;
  /**
   * Crashes node `name` as a machine dies: PostgreSQL and Patroni killed (SIGKILL). Its leader key expires after
   * Patroni's `ttl`, and the other node takes over at its next loop.
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

/**
 * `config` (the guide's patroni.yml) with its paths under `home` (the password file, the data, the socket) and
 * this machine's PostgreSQL binaries; a small server with fsync off, since the suite runs beside it.
 */
export function onDisk(config: string, home: string): string {
  return config
    .replace('/var/lib/postgresql/15/orders.pgpass', join(home, 'pgpass'))
    .replace('/var/lib/postgresql/15/orders', join(home, 'data'))
    .replace('/usr/lib/postgresql/15/bin', PG_BIN)
    .replace('/var/run/postgresql', home)
    .replace('max_connections: 200', "max_connections: 100\n        shared_buffers: '16MB'\n        fsync: 'off'");
}

/** Starts the cluster: etcd, node1 (the leader), node2 (its synchronous standby), HAProxy; the database `orders`. */
export async function startHaCluster(): Promise<HaCluster> {
  assert.ok(!HA_MISSING, String(HA_MISSING));
  const dir = mkdtempSync(join(tmpdir(), 'orders-ha-'));
  chmodSync(dir, 0o755);
  const { children, keep, why } = programOutputs(3_000);
  const run = (name: string, command: string, args: readonly string[], env: Record<string, string> = {}) =>
    keep(name, spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: dir, env: { ...process.env, ...env } }));
  const scope = `orders-test-${process.pid}`;

  // etcd with the variables of the documented /etc/default/etcd, as Debian's unit starts it.
  const [etcdPort, etcdPeer] = [await freePort(), await freePort()];
  const etcdEnv = environmentOf(
    readFileSync(new URL('etcd.env.template', FIXTURES), 'utf8')
      .replaceAll('10.0.0.31:2379', `127.0.0.1:${etcdPort}`)
      .replaceAll('10.0.0.31:2380', `127.0.0.1:${etcdPeer}`)
      .replace('/var/lib/etcd/orders', join(dir, 'etcd')),
  );
  const etcd = run('etcd', ETCD as string, [], etcdEnv);
  await untilListening(etcdPort, () => etcd.exitCode !== null, why);
  // The guide's check, on etcd's HTTP API (Debian ships no etcdctl).
  await until(
    async () =>
      (
        await fetch(`http://127.0.0.1:${etcdPort}/health`).then(
          (r) => r.json(),
          () => ({}),
        )
      ).health === 'true',
    () => `etcd never said it was healthy:\n${why()}`,
    10_000,
  );

  const nodes: HaNode[] = [];
  for (const name of ['node1', 'node2']) nodes.push({ name, pgPort: await freePort(), restPort: await freePort() });
  const template = readFileSync(new URL('patroni.yml.template', FIXTURES), 'utf8');
  const patroni = new Map<string, ChildProcess>();
  const startNode = (node: HaNode) => {
    const home = join(dir, node.name);
    mkdirSync(home, { recursive: true });
    const config = onDisk(
      template
        .replace('scope: orders', `scope: ${scope}`)
        .replace('name: node1', `name: ${node.name}`)
        .replaceAll('10.0.0.21:8008', `127.0.0.1:${node.restPort}`)
        .replace('hosts: 10.0.0.31:2379', `hosts: 127.0.0.1:${etcdPort}`)
        .replaceAll('10.0.0.21:5432', `127.0.0.1:${node.pgPort}`)
        .replaceAll('10.0.0.0/24 scram-sha-256', '127.0.0.1/32 scram-sha-256'),
      home,
    );
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
    .replace('bind :5001', `bind 127.0.0.1:${await freePort()}`);
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

  // The service's role and database, by the guide's script on the leader's socket; a password a URL must encode.
  const password = `orders-${randomBytes(6).toString('hex')}@/#?%`;
  const script = readFileSync(new URL('ha-database.sh', FIXTURES), 'utf8')
    .replace('-h /var/run/postgresql -p 5432', `-h ${join(dir, node1.name)} -p ${node1.pgPort}`)
    .replace('haproxy-host:5000', `127.0.0.1:${proxyPort}`);
  writeFileSync(join(dir, 'ha-database.sh'), script);
  const [command, args] = asPostgres('sh', [join(dir, 'ha-database.sh')]);
  const created = spawnSync(command, args, { env: { ...process.env, ORDERS_DB_PASSWORD: password }, cwd: dir });
  assert.equal(created.status, 0, created.stderr.toString());
  const url = /^DATABASE_URL=(.+)$/m.exec(created.stdout.toString())?.[1] as string;
  assert.ok(url !== undefined, created.stdout.toString());
  const direct = (node: HaNode) => url.replace(`127.0.0.1:${proxyPort}`, `127.0.0.1:${node.pgPort}`);

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
    url,
    password,
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
