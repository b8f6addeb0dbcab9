/**
 * A TCP proxy in front of a database, which a test can take down and bring
 * back on the same port: the database "goes away" without stopping it.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export interface Proxy {
  readonly port: number;
  /** Refuses new connections and cuts the open ones. */
  down(): Promise<void>;
  /** Accepts connections again, on the same port. */
  up(): Promise<void>;
  close(): Promise<void>;
}

export type ProxyTarget = { readonly host: string; readonly port: number } | { readonly path: string };

export async function startProxy(target: ProxyTarget): Promise<Proxy> {
  const sockets = new Set<Socket>();
  const newServer = (): Server =>
    createServer((client) => {
      const upstream = "path" in target ? createConnection(target.path) : createConnection(target.port, target.host);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
  let server = newServer();
  const listen = (port: number) => new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  await listen(0);
  const port = (server.address() as { port: number }).port;
  const down = async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of sockets) s.destroy();
    await closed;
  };
  return {
    port,
    down,
    async up() {
      server = newServer();
      await listen(port);
    },
    async close() {
      if (server.listening) await down();
    },
  };
}
