/** A webhook receiver on loopback that records every request and answers as told. */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

export interface Receiver {
  readonly url: string;
  readonly received: Received[];
  /** Resolves when `count` requests have arrived in all. */
  waitFor(count: number): Promise<Received[]>;
  close(): Promise<void>;
}

/** `answer(n)` gives the status for the n-th request (1-based); `null` never answers. */
export async function startReceiver(answer: (n: number) => number | null = () => 200): Promise<Receiver> {
  const received: Received[] = [];
  const waiters: { count: number; resolve: (r: Received[]) => void }[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      const status = answer(received.length);
      if (status !== null) res.writeHead(status).end();
      for (const w of waiters.filter((w) => received.length >= w.count)) w.resolve([...received]);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    waitFor(count) {
      if (received.length >= count) return Promise.resolve([...received]);
      return new Promise((resolve) => waiters.push({ count, resolve }));
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
