/**
 * A private PostgreSQL primary and its streaming standby (contract §17's
 * `DATABASE_READ_URL`), built with PostgreSQL's own tools: `initdb`, then
 * `pg_basebackup -R` from the running primary, each server on a free loopback
 * port with its socket and log in its own folder. The servers run as the
 * `postgres` user: as root, every tool runs through `runuser -u postgres`.
 * A test can pause the standby's replay, stop and start it, and wait until
 * it has replayed what the primary wrote.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type SpawnOptionsWithStdioTuple, type StdioNull, type StdioPipe } from 'node:child_process';
import {
  appendFileSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { findProgram, freePort, until } from './tools.ts';

/** The newest PostgreSQL's programs, where Debian puts them (CI starts the same version's pair). */
const PG_BIN = (() => {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((name) => /^\d+$/.test(name)) : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  return newest === undefined ? undefined : join(root, newest, 'bin');
})();
const TOOLS = ['initdb', 'pg_basebackup', 'pg_ctl', 'postgres'] as const;
/**
 * Where the tools run: a folder every user can enter (not root's), with the variables of this process but
 * libpq's (PGHOST, PGPORT…): each tool is told where to go.
 */
const TOOL_OPTIONS: SpawnOptionsWithStdioTuple<StdioNull, StdioPipe, StdioPipe> = {
  cwd: tmpdir(),
  env: Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('PG'))),
  stdio: ['ignore', 'pipe', 'pipe'],
};
const AS_ROOT = process.getuid?.() === 0;
/** The servers refuse to run as root: as root, the tools run as the postgres user, who owns the folders. */
const RUNUSER = AS_ROOT ? findProgram(['runuser', '/usr/sbin/runuser', '/sbin/runuser'], ['--version']) : undefined;
const POSTGRES_IDS = AS_ROOT ? ['-u', '-g'].map((flag) => Number(spawnSync('id', [flag, 'postgres']).stdout)) : [];

export const REPLICA_MISSING =
  PG_BIN === undefined || !TOOLS.every((tool) => existsSync(join(PG_BIN, tool)))
    ? "PostgreSQL's server programs are not installed (Debian: apt-get install postgresql-15); CI has them"
    : AS_ROOT && (RUNUSER === undefined || !POSTGRES_IDS.every((id) => id > 0))
      ? 'running as root needs runuser and a postgres user to run the servers as'
      : false;

/** As the machine's server: a new database's collation is the same on the pair. */
const INITDB_ARGS = ['-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C.UTF-8', '--no-sync'];

/**
 * -R: standby.signal and primary_conninfo; -C -S: a slot keeps the WAL a stopped standby has yet to receive;
 * a checkpoint at once rather than spread over minutes.
 */
const BASEBACKUP_ARGS = ['-R', '-C', '-S', 'orders_standby', '--checkpoint=fast', '--no-sync'];

/**
 * Small and quick, for tests: neither server syncs to disk (fsync off), but a
 * commit still writes its WAL before it returns (synchronous_commit stays on),
 * so that `caughtUp()` after a commit covers that commit.
 */
const SETTINGS = {
  listen_addresses: "'127.0.0.1'",
  wal_level: 'replica',
  max_wal_senders: '4',
  max_replication_slots: '4',
  hot_standby: 'on',
  // The standby's readers are never cancelled by the primary's vacuum.
  hot_standby_feedback: 'on',
  wal_retrieve_retry_interval: "'100ms'",
  shared_buffers: "'16MB'",
  max_connections: '50',
  fsync: 'off',
  full_page_writes: 'off',
  log_line_prefix: "'%m [%p] %q%u@%d '",
};

/** How long a server may take to start or stop, and a standby to stream or catch up. */
const WAIT_MS = 30_000;

export interface ReplicaPair {
  /** The folder of both servers: their data, sockets and logs. */
  readonly dir: string;
  /** postgres://postgres@127.0.0.1:<primary's port>/`database`. */
  primaryUrl(database?: string): string;
  /** postgres://postgres@127.0.0.1:<standby's port>/`database`. */
  standbyUrl(database?: string): string;
  /** Pauses the standby's replay (it keeps receiving WAL); resolves once it is paused. */
  pauseReplay(): Promise<void>;
  resumeReplay(): Promise<void>;
  /** Resolves once the standby has replayed all the primary had written when called; rejects after `ms`. */
  caughtUp(ms?: number): Promise<void>;
  /** `pg_ctl stop -m fast` of the standby: it refuses connections until `startStandby()`. */
  stopStandby(): Promise<void>;
  /** Starts the standby again; resolves once it accepts connections and streams. */
  startStandby(): Promise<void>;
  /** Creates `name` on the primary; resolves once the standby has it. */
  createDatabase(name: string): Promise<void>;
  /** The process ids of the servers' postmasters running now. */
  postmasters(): number[];
  /** What both servers logged, for assertion messages. */
  log(): string;
  /** Stops both servers, ends every connection and removes the folder. */
  stop(): Promise<void>;
}

/** Starts a primary and a standby streaming from it; anything started is stopped when a step fails. */
export async function startReplicaPair(): Promise<ReplicaPair> {
  assert.ok(REPLICA_MISSING === false, REPLICA_MISSING || '');
  const dir = mkdtempSync(join(tmpdir(), 'orders-replica-'));
  const primary = server(dir, 'primary', await freePort());
  let standbyPort = await freePort();
  while (standbyPort === primary.port) standbyPort = await freePort();
  const standby = server(dir, 'standby', standbyPort);
  // A client connects at its first statement.
  const connect = (port: number) =>
    postgres(`postgres://postgres@127.0.0.1:${port}/postgres`, { max: 1, onnotice: () => {}, connect_timeout: 5 });
  const primarySql = connect(primary.port);
  let standbySql = connect(standby.port);
  const log = () =>
    [primary, standby]
      .filter(({ logFile }) => existsSync(logFile))
      .map(({ name, logFile }) => `== ${name} (${logFile}) ==\n${readFileSync(logFile, 'utf8')}`)
      .join('\n');

  const streaming = () =>
    until(
      async () =>
        (await standbySql<{ status: string }[]>`SELECT status FROM pg_stat_wal_receiver`)[0]?.status === 'streaming',
      () => `the standby is not streaming within ${WAIT_MS} ms:\n${log()}`,
      WAIT_MS,
    );
  const caughtUp = async (ms = 10_000) => {
    const primaryAt = await primarySql<{ lsn: string }[]>`SELECT pg_current_wal_lsn()::text AS lsn`;
    const lsn = primaryAt[0]?.lsn as string;
    let replayed = '';
    await until(
      async () => {
        const [row] = await standbySql<{ replayed: string; done: boolean }[]>`
          SELECT pg_last_wal_replay_lsn()::text AS replayed, pg_last_wal_replay_lsn() >= ${lsn}::pg_lsn AS done`;
        replayed = row?.replayed ?? '';
        return row?.done === true;
      },
      () => `the standby replayed up to ${replayed}, not ${lsn}, within ${ms} ms:\n${log()}`,
      ms,
    );
  };
  // A test process that ends without stop() (an uncaught error) stops the servers on its way out: they outlive it
  // otherwise (pg_ctl detaches them).
  const onExit = () => {
    for (const { data } of [standby, primary])
      if (existsSync(join(data, 'postmaster.pid')))
        spawnSync(...command('pg_ctl', ['stop', '-m', 'immediate', '-D', data]), TOOL_OPTIONS);
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', onExit);
  /** Ends the connections, stops what runs and removes the folder; then throws what failed, if anything did. */
  const halt = async () => {
    process.off('exit', onExit);
    await Promise.all([primarySql.end({ timeout: 1 }), standbySql.end({ timeout: 1 })]);
    const failed: string[] = [];
    // The standby first: a primary's fast shutdown waits until its walsenders have sent everything.
    for (const { data } of [standby, primary])
      if (existsSync(join(data, 'postmaster.pid')))
        await pgCtl(['stop', '-m', 'fast', '-D', data]).catch((error: unknown) => failed.push(String(error)));
    rmSync(dir, { recursive: true, force: true });
    if (failed.length > 0) throw new Error(`the replica pair did not stop (${dir} removed):\n${failed.join('\n')}`);
  };

  try {
    for (const folder of [dir, primary.folder, standby.folder]) {
      mkdirSync(folder, { recursive: true });
      if (AS_ROOT) chownSync(folder, POSTGRES_IDS[0] as number, POSTGRES_IDS[1] as number);
    }
    await pg('initdb', ['-D', primary.data, ...INITDB_ARGS]);
    configure(primary);
    await pgCtl(['start', '-D', primary.data, '-l', primary.logFile]);
    const from = ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres'];
    await pg('pg_basebackup', [...from, '-D', standby.data, ...BASEBACKUP_ARGS]);
    configure(standby);
    await pgCtl(['start', '-D', standby.data, '-l', standby.logFile]);
    await streaming();
  } catch (error) {
    const why = `the replica pair did not start: ${String(error)}\n${log()}`;
    const unstopped = await halt().then(
      () => '',
      (stopError: unknown) => `\n${String(stopError)}`,
    );
    throw new Error(why + unstopped, { cause: error });
  }

  const url = (port: number, database: string) =>
    `postgres://postgres@127.0.0.1:${port}/${encodeURIComponent(database)}`;
  let stopped = false;
  return {
    dir,
    primaryUrl: (database = 'postgres') => url(primary.port, database),
    standbyUrl: (database = 'postgres') => url(standby.port, database),
    async pauseReplay() {
      await standbySql`SELECT pg_wal_replay_pause()`;
      let state = '';
      await until(
        async () => {
          const [row] = await standbySql<{ state: string }[]>`SELECT pg_get_wal_replay_pause_state() AS state`;
          state = row?.state ?? '';
          return state === 'paused';
        },
        () => `the standby's replay is ${state}, not paused, within ${WAIT_MS} ms:\n${log()}`,
        WAIT_MS,
      );
    },
    async resumeReplay() {
      await standbySql`SELECT pg_wal_replay_resume()`;
    },
    caughtUp,
    async stopStandby() {
      await standbySql.end({ timeout: 1 });
      await pgCtl(['stop', '-m', 'fast', '-D', standby.data]);
      standbySql = connect(standby.port);
    },
    async startStandby() {
      await pgCtl(['start', '-D', standby.data, '-l', standby.logFile]);
      await streaming();
    },
    async createDatabase(name) {
      assert.match(name, /^[a-z_][a-z0-9_]*$/, 'a database name of lower-case letters, digits and underscores');
      await primarySql.unsafe(`CREATE DATABASE ${name}`);
      await caughtUp();
    },
    postmasters: () =>
      [primary, standby]
        .map(({ data }) => join(data, 'postmaster.pid'))
        .filter((file) => existsSync(file))
        .map((file) => Number(readFileSync(file, 'utf8').split('\n')[0])),
    log,
    async stop() {
      if (stopped) return;
      stopped = true;
      await halt();
    },
  };
}

interface Server {
  readonly name: string;
  readonly port: number;
  /** Its socket and log. */
  readonly folder: string;
  readonly data: string;
  readonly logFile: string;
}

function server(dir: string, name: string, port: number): Server {
  const folder = join(dir, name);
  return { name, port, folder, data: join(folder, 'data'), logFile: join(folder, 'postgres.log') };
}

/** Appends the test settings and this server's port, socket folder and name (later lines win). */
function configure({ name, port, folder, data }: Server): void {
  const settings = { ...SETTINGS, port: String(port), unix_socket_directories: `'${folder}'` };
  const lines = Object.entries({ ...settings, cluster_name: `'orders-${name}'` }).map(([k, v]) => `${k} = ${v}\n`);
  appendFileSync(join(data, 'postgresql.conf'), `\n# test/support/replica.ts\n${lines.join('')}`);
}

/** pg_ctl, waiting (-w) at most WAIT_MS for the server to start or stop. */
function pgCtl(args: readonly string[]): Promise<string> {
  return pg('pg_ctl', [...args, '-w', '-s', '-t', String(WAIT_MS / 1000)]);
}

/**
 * Runs one of PostgreSQL's programs (as the postgres user when this is root); resolves with what it printed,
 * rejects with it when it fails or outlives WAIT_MS. `pg_ctl start` must have `-l`: a server that inherited the
 * pipes would hold them open after pg_ctl exits.
 */
function pg(tool: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(...command(tool, args), TOOL_OPTIONS);
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), WAIT_MS + 5_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(output);
      else reject(new Error(`${tool} ${args.join(' ')}: ${signal ?? `exit ${code}`}\n${output}`));
    });
  });
}

/** `tool` with `args`, as the postgres user when this is root. */
function command(tool: string, args: readonly string[]): [string, readonly string[]] {
  const bin = join(PG_BIN as string, tool);
  return AS_ROOT ? [RUNUSER as string, ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
}
