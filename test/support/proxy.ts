/**
 * A TCP proxy in front of a database, which a test can take down, blackhole
 * and bring back on the same port: the database "goes away" without
 * stopping it.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { openEmbedded } from '../../src/db/embedded.ts';
import type { TestDatabase } from './database.ts';

export interface TcpProxy {
  readonly port: number;
  /**
   * Refuses new connections and cuts the open ones: closed politely (FIN),
   * or with `reset`, reset (RST), as a crashed peer or a firewall does.
   */
  down(options?: { reset?: boolean }): Promise<void>;
  /**
   * Keeps every connection open, and accepts new ones, but forwards nothing
   * either way (a link that stops answering). After `up()` new connections
   * are forwarded again, but the held ones never answer again (as through a
   * stateful firewall that forgot them): only their client can end them.
   */
  blackhole(): void;
  /**
   * Holds every byte either way, on open connections and new ones (which it connects upstream), until
   * `resume()` forwards what was held and goes on: a server whose processes were stopped, or a partition that
   * heals, where TCP delivers late what it kept.
   */
  pause(): void;
  resume(): void;
  /** Goes on forwarding to the server, but holds its answers on open connections (an answer lost on the way). */
  deafen(): void;
  /** Accepts and forwards connections again, on the same port. */
  up(): Promise<void>;
  /** Connections accepted so far. */
  readonly accepted: number;
  close(): Promise<void>;
}

export type ProxyTarget = { readonly host: string; readonly port: number } | { readonly path: string };

export async function startProxy(target: ProxyTarget): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
  let holding = false;
  let pausing = false;
  let accepted = 0;
  const hold = (s: Socket) => {
    s.unpipe();
    s.pause();
  };
  const newServer = (): Server =>
    createServer((client) => {
      accepted += 1;
      sockets.add(client);
      client.on('close', () => sockets.delete(client));
      client.on('error', () => client.destroy());
      if (holding) {
        client.pause();
        return;
      }
      const upstream = 'path' in target ? createConnection(target.path) : createConnection(target.port, target.host);
      sockets.add(upstream);
      upstream.on('close', () => sockets.delete(upstream));
      const pair = { client, upstream };
      pairs.add(pair);
      upstream.on('close', () => pairs.delete(pair));
      for (const s of [client, upstream]) {
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
        s.on('close', () => (s === client ? upstream : client).destroy());
      }
      if (!pausing) client.pipe(upstream).pipe(client);
    });
  let server = newServer();
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
  await listen(0);
  const port = (server.address() as { port: number }).port;
  const cutAll = (reset = false) => {
    for (const s of sockets) {
      if (reset && !s.destroyed && s.readyState === 'open') s.resetAndDestroy();
      else s.destroy();
    }
  };
  const down = async (options: { reset?: boolean } = {}) => {
    holding = false;
    const closed = server.listening ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
    cutAll(options.reset);
    await closed;
  };
  return {
    port,
    down,
    blackhole() {
      holding = true;
      for (const s of sockets) hold(s);
    },
    pause() {
      pausing = true;
      for (const { client, upstream } of pairs) {
        hold(client);
        hold(upstream);
      }
    },
    resume() {
      pausing = false;
      for (const { client, upstream } of pairs) {
        client.pipe(upstream);
        upstream.pipe(client);
      }
    },
    deafen() {
      for (const { upstream } of pairs) hold(upstream);
    },
    async up() {
      if (holding) {
        holding = false;
        return;
      }
      if (server.listening) return;
      server = newServer();
      await listen(port);
    },
    get accepted() {
      return accepted;
    },
    async close() {
      await down();
    },
  };
}

/** A proxy in front of a test database, with the `DATABASE_URL` that goes through it. */
export interface DatabaseProxy {
  readonly proxy: TcpProxy;
  /** `postgres://…@127.0.0.1:<proxy port>/<database>`. */
  readonly url: string;
  /** Closes the proxy, then the embedded database when there is one. */
  close(): Promise<void>;
}

/**
 * Starts a proxy in front of `database`: the real server's test database, or
 * (without one) a new in-memory embedded database served on its socket for
 * `maxConnections` connections.
 */
export async function proxyToDatabase(database: TestDatabase, maxConnections: number): Promise<DatabaseProxy> {
  if (database.target) {
    const proxy = await startProxy({ host: database.target.host, port: database.target.port });
    // The run's URL with the proxy's address: its user and password (through PgBouncer, SCRAM) kept.
    const url = new URL(database.url);
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    return { proxy, url: url.toString(), close: () => proxy.close() };
  }
  const embedded = await openEmbedded(undefined, maxConnections);
  const proxy = await startProxy({ path: embedded.socketPath });
  return {
    proxy,
    url: `postgres://postgres@127.0.0.1:${proxy.port}/postgres`,
    async close() {
      await proxy.close();
      await embedded.close();
    },
  };
}
