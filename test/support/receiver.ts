/** A webhook receiver on loopback that records every request and answers as told. */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** When its head arrived (`Date.now()`). */
  readonly at: number;
}

export interface Receiver {
  readonly url: string;
  readonly received: Received[];
  /**
   * The most requests open at once so far: a request is open from its head's
   * arrival until it is answered or its sender hangs up.
   */
  readonly mostOpen: number;
  /** Resolves when `count` requests have arrived in all. */
  waitFor(count: number): Promise<Received[]>;
  close(): Promise<void>;
}

/** `answer(n)` gives the status for the n-th request (1-based); `null` never answers. */
export async function startReceiver(answer: (n: number) => number | null = () => 200): Promise<Receiver> {
  const received: Received[] = [];
  const waiters: { count: number; resolve: (r: Received[]) => void }[] = [];
  let open = 0;
  let mostOpen = 0;
  const server = createServer((req, res) => {
    const at = Date.now();
    mostOpen = Math.max(mostOpen, ++open);
    let closed = false;
    // Whichever comes first: the answer sent, the sender's end of the connection, or its close.
    const close = () => {
      if (closed) return;
      closed = true;
      open -= 1;
      // A kept-alive connection carries later requests: not this one's listener.
      req.socket.off('end', close);
    };
    res.once('finish', close);
    res.once('close', close);
    req.socket.once('end', close);
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push({ headers: req.headers, body, at });
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
    get mostOpen() {
      return mostOpen;
    },
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
