/**
 * The deployed topology of docs/operations.md across hosts, each host a
 * network namespace (test/support/netns.ts) on two networks: `back` for the
 * databases (etcd; Patroni with PostgreSQL 15 on `db1` and `db2`, in
 * synchronous mode; the database HAProxy on `dbproxy`, routing to the leader)
 * and `front` for the clients (the service HAProxy on `lb`). Two service
 * hosts, `svc1` and `svc2`, are on both: each runs its own PgBouncer (to the
 * database HAProxy) and the built program (`dist/orders.mjs`) through it.
 * Every configuration is the guide's file (test/fixtures/), only addresses,
 * ports and paths replaced: the guide's 10.0.0.0/24 becomes 10.213.0.0/24
 * here, the service hosts' front addresses 10.213.1.0/24. This process is
 * `.1` on both networks: the clients, and the judge reading the database.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type Database } from '../../src/db/database.ts';
import { type Host, type Network, startLab } from './netns.ts';
import { onDisk } from './patroni.ts';
import { environmentOf, findProgram, programOutputs, until } from './tools.ts';

const FIXTURES = new URL('../fixtures/', import.meta.url);
const PROGRAM = new URL('../../dist/orders.mjs', import.meta.url).pathname;
const fixture = (name: string) => readFileSync(new URL(name, FIXTURES), 'utf8');
const PROGRAMS = {
  patroni: findProgram(['patroni', '/usr/bin/patroni'], ['--version']),
  etcd: findProgram(['etcd', '/usr/bin/etcd'], ['--version']),
  haproxy: findProgram(['haproxy', '/usr/sbin/haproxy'], ['-v']),
  pgbouncer: findProgram(['pgbouncer', '/usr/sbin/pgbouncer'], ['--version']),
};

/** Why the topology cannot be built here, or `false`. */
export const TOPOLOGY_MISSING: string | false = (() => {
  const missing = Object.entries(PROGRAMS).filter(([, path]) => path === undefined);
  return missing.length > 0
    ? `${missing.map(([name]) => name).join(', ')} not installed (Debian: patroni etcd-server haproxy pgbouncer)`
    : false;
})();

export type DbHost = 'db1' | 'db2';
/** The Patroni member (and HAProxy server) on database host `host`, as the guide names them. */
const node = (host: DbHost) => (host === 'db1' ? 'node1' : 'node2');
export type ServiceHost = 'svc1' | 'svc2';

export interface Topology {
  /** The service HAProxy, where clients send their requests. */
  readonly base: string;
  /**
   * Addresses of this process's on the front network, for clients to send from: the service HAProxy lets one
   * address hold 64 connections at most.
   */
  readonly clients: readonly string[];
  /** The database through the database HAProxy, as the judge reads it. */
  readonly db: Database;
  readonly back: Network;
  readonly hosts: Readonly<Record<'etcd' | 'dbproxy' | 'lb' | DbHost | ServiceHost, Host>>;
  /** Patroni's REST status of `path` on `host` (0 when it does not answer within a second). */
  rest(host: DbHost, path: string): Promise<number>;
  /** Whether the database HAProxy routes to `host` now. */
  routesDatabase(host: DbHost): Promise<boolean>;
  /** Whether the service HAProxy routes to `host` now (its server in the ready backend is UP). */
  routesService(host: ServiceHost): Promise<boolean>;
  /** Kills `host`'s service process (SIGKILL), as a machine dies. */
  kill(host: ServiceHost): void;
  /** The last output of every program, for a failure's message. */
  why(): string;
  close(): Promise<void>;
}

/** Builds and starts it all; resolves once the service HAProxy routes to both service hosts. */
export async function startTopology(): Promise<Topology> {
  assert.ok(!TOPOLOGY_MISSING, String(TOPOLOGY_MISSING));
  const dir = mkdtempSync(join(tmpdir(), 'orders-topology-'));
  chmodSync(dir, 0o755);
  const lab = startLab();
  const { children, keep, why } = programOutputs(2_000);
  try {
    const back = lab.network('back');
    const front = lab.network('front');
    const clients = Array.from({ length: 8 }, (_, n) => lab.alias(front, 101 + n));
    const hosts = {
      etcd: lab.host('etcd', 31, [back]),
      db1: lab.host('db1', 21, [back]),
      db2: lab.host('db2', 22, [back]),
      dbproxy: lab.host('dbproxy', 41, [back]),
      svc1: lab.host('svc1', 11, [back, front]),
      svc2: lab.host('svc2', 12, [back, front]),
      lb: lab.host('lb', 51, [front]),
    };
    // The guide's database network, here.
    const net = (text: string) => text.replaceAll('10.0.0.', back.prefix);
    const address = (host: keyof typeof hosts, network = back) => hosts[host].address(network);
    const wait = (done: () => Promise<boolean>, what: string, ms = 60_000) =>
      until(done, () => `${what}:\n${why()}`, ms);
    const get = (url: string) =>
      fetch(url, { signal: AbortSignal.timeout(1_000) }).then(
        async (r) => ({ status: r.status, text: await r.text() }),
        () => ({ status: 0, text: '' }),
      );

    // etcd, with the guide's /etc/default/etcd.
    const etcdEnv = environmentOf(net(fixture('etcd.env.template')).replace('/var/lib/etcd/orders', join(dir, 'etcd')));
    keep('etcd', hosts.etcd.spawn(PROGRAMS.etcd as string, [], { env: etcdEnv }));
    await wait(async () => (await get(`http://${address('etcd')}:2379/health`)).text.includes('true'), 'etcd');

    // Patroni on each database host, the guide's file with its name and address.
    const rest = async (host: DbHost, path: string) => (await get(`http://${address(host)}:8008${path}`)).status;
    const startPatroni = (host: DbHost) => {
      const home = join(dir, host);
      mkdirSync(home, { recursive: true });
      const config = onDisk(
        net(fixture('patroni.yml.template'))
          .replace('name: node1', `name: ${node(host)}`)
          .replaceAll(`${back.prefix}21:`, `${address(host)}:`),
        home,
      );
      writeFileSync(join(home, 'patroni.yml'), config);
      spawnSync('chown', ['-R', 'postgres:', home]);
      keep(host, hosts[host].spawn(PROGRAMS.patroni as string, [join(home, 'patroni.yml')], { user: 'postgres' }));
    };
    startPatroni('db1');
    await wait(async () => (await rest('db1', '/primary')) === 200, 'db1 never led');
    startPatroni('db2');
    await wait(async () => (await rest('db2', '/sync')) === 200, 'db2 never became the synchronous standby');

    // The database HAProxy, with a statistics page to tell where it routes.
    const stats = (port: number) =>
      `\nlisten stats\n    mode http\n    bind :${port}\n    stats enable\n    stats uri /\n`;
    writeFileSync(join(dir, 'haproxy-ha.cfg'), net(fixture('haproxy-ha.cfg.template')) + stats(8404));
    keep('dbproxy', hosts.dbproxy.spawn(PROGRAMS.haproxy as string, ['-db', '-f', join(dir, 'haproxy-ha.cfg')]));
    const routes = async (host: string, listener: string, server: string) =>
      (await get(`http://${host}:8404/;csv`)).text
        .split('\n')
        .some((line) => line.startsWith(`${listener},${server},`) && line.split(',')[17] === 'UP');
    const routesDatabase = (host: DbHost) => routes(address('dbproxy'), 'primary', node(host));
    await wait(() => routesDatabase('db1'), 'the database HAProxy never routed to db1');

    // The service's role and database, by the guide's script on the leader; its DATABASE_URL.
    const password = `orders-${randomBytes(6).toString('hex')}@/#?%`;
    const script = fixture('ha-database.sh')
      .replace('-h /var/run/postgresql -p 5432', `-h ${join(dir, 'db1')} -p 5432`)
      .replace('haproxy-host:5000', `${address('dbproxy')}:5000`);
    writeFileSync(join(dir, 'ha-database.sh'), script);
    const created = hosts.db1.run('sh', [join(dir, 'ha-database.sh')], {
      user: 'postgres',
      env: { ORDERS_DB_PASSWORD: password },
    });
    assert.equal(created.status, 0, created.stderr);
    const url = /^DATABASE_URL=(.+)$/m.exec(created.stdout)?.[1] as string;
    assert.ok(url !== undefined, created.stdout);
    const secret = hosts.db1.run(
      'psql',
      [
        '-h',
        join(dir, 'db1'),
        '-p',
        '5432',
        '-d',
        'postgres',
        '-XAtc',
        "SELECT rolpassword FROM pg_authid WHERE rolname = 'orders'",
      ],
      { user: 'postgres' },
    );
    assert.equal(secret.status, 0, secret.stderr);

    // Each service host: its PgBouncer (the guide's file, to the database HAProxy), then the built program on it.
    const services = new Map<ServiceHost, ChildProcess>();
    for (const host of ['svc1', 'svc2'] as const) {
      const home = join(dir, host);
      mkdirSync(home, { recursive: true });
      writeFileSync(join(home, 'userlist.txt'), `"orders" "${secret.stdout.trim()}"\n`);
      const ini = fixture('pgbouncer.ini.template')
        .replace('* = host=127.0.0.1 port=5432', `* = host=${address('dbproxy')} port=5000`)
        .replace('auth_file = /etc/pgbouncer/userlist.txt', `auth_file = ${join(home, 'userlist.txt')}`);
      writeFileSync(join(home, 'pgbouncer.ini'), `${ini}unix_socket_dir =\n`);
      spawnSync('chown', ['-R', 'postgres:', home]);
      keep(
        `${host} pgbouncer`,
        hosts[host].spawn(PROGRAMS.pgbouncer as string, [join(home, 'pgbouncer.ini')], {
          user: 'postgres',
        }),
      );
      const service = hosts[host].spawn(process.execPath, [PROGRAM], {
        env: {
          DATABASE_URL: url.replace(`${address('dbproxy')}:5000`, '127.0.0.1:6432'),
          DB_PREPARE: 'off',
          HOST: hosts[host].address(front),
          PORT: '3000',
          TRUST_PROXY: hosts.lb.address(front),
          RATE_LIMIT: 'off',
          LOG_LEVEL: 'warn',
          DATABASE_WAIT: '30',
        },
      });
      services.set(host, keep(host, service));
    }

    // The service HAProxy, on the front network.
    const lb = fixture('haproxy.cfg.template')
      .replaceAll('10.0.0.11:3000', `${hosts.svc1.address(front)}:3000`)
      .replaceAll('10.0.0.12:3000', `${hosts.svc2.address(front)}:3000`);
    writeFileSync(join(dir, 'haproxy.cfg'), lb + stats(8404));
    keep('lb', hosts.lb.spawn(PROGRAMS.haproxy as string, ['-db', '-f', join(dir, 'haproxy.cfg')]));
    const routesService = (host: ServiceHost) =>
      routes(hosts.lb.address(front), 'orders', host === 'svc1' ? 'orders1' : 'orders2');
    await wait(async () => (await routesService('svc1')) && (await routesService('svc2')), 'the services never ready');

    const db = await openDatabase({ databaseUrl: url, dataDir: '', poolMax: 2, prepare: true });
    return {
      base: `http://${hosts.lb.address(front)}`,
      clients,
      db,
      back,
      hosts,
      rest,
      routesDatabase,
      routesService,
      kill: (host) => services.get(host)?.kill('SIGKILL'),
      why,
      async close() {
        await db.close(0);
        // Each program asked to stop (Patroni stops its PostgreSQL), for at most 10 s; the rest is killed.
        const running = children.reverse().filter((child) => child.exitCode === null && child.signalCode === null);
        const exited = Promise.all(running.map((child) => new Promise((resolve) => child.once('exit', resolve))));
        for (const child of running) child.kill('SIGTERM');
        await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
        lab.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    lab.close();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
