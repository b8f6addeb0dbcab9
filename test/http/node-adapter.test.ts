/**
 * The node:http adapter: its table of open connections (used by shutdown)
 * forgets every connection that closed, whatever way it ended, so no client
 * can make it grow; its caps on connections, per process and per client
 * address, and on the time to send a request head; and what it does with a
 * body nobody read (contract §11).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { HEALTH_RESERVE } from '../../src/http/connections.ts';
import { createNodeServer } from '../../src/http/node-adapter.ts';
import { bodySourceOf } from '../../src/http/incoming-request.ts';
import { bufferedResponse, contentOf } from '../../src/http/response.ts';
import { bodyParts, rawExchange, tally } from '../support/attacks.ts';

/**
 * Sends `bytes` on a new connection and resolves when the server has closed
 * it, or after `destroyAfterMs` closes it from this side.
 */
async function exchange(port: number, bytes: string, destroyAfterMs?: number): Promise<void> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  socket.on('data', () => {});
  await once(socket, 'connect');
  socket.write(bytes);
  if (destroyAfterMs !== undefined) {
    await new Promise((resolve) => setTimeout(resolve, destroyAfterMs));
    socket.destroy();
  } else {
    await once(socket, 'close');
  }
}

describe('createNodeServer()', () => {
  it('holds no closed connection: CONNECT, a body cut off, a client gone before its answer', async () => {
    let release = () => {};
    const slow = new Promise<void>((resolve) => {
      release = resolve;
    });
    const node = createNodeServer(
      async (request) => {
        if (new URL(request.url).pathname === '/slow') await slow;
        else if (request.body !== null) await request.arrayBuffer().catch(() => {});
        return new Response('ok');
      },
      { requestTimeoutMs: 5_000 },
    );
    node.server.listen(0, '127.0.0.1');
    await once(node.server, 'listening');
    const { port } = node.server.address() as AddressInfo;
    try {
      const clients: Promise<void>[] = [];
      for (let i = 0; i < 10; i++) {
        clients.push(exchange(port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'));
        clients.push(exchange(port, 'POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\nhalf', 50));
        clients.push(exchange(port, 'GET /slow HTTP/1.1\r\nHost: a\r\n\r\n', 50));
      }
      await Promise.all(clients);
      release();
      // The server learns of each close on its own time: wait for the table to drain.
      for (let i = 0; i < 200 && node.connections > 0; i++) await new Promise((resolve) => setImmediate(resolve));
      for (let i = 0; i < 50 && node.connections > 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(node.connections, 0);
    } finally {
      await node.close();
    }
  });
});

/** An answer in memory, as the service's are: written with its Content-Length, not chunked. */
const text = (body: string, status = 200) => bufferedResponse(Buffer.from(body), { status });

/** A server of `handler` with `options`, listening on a free port of 127.0.0.1. */
async function serving(
  handler: Parameters<typeof createNodeServer>[0],
  options: Partial<Parameters<typeof createNodeServer>[1]> = {},
) {
  const node = createNodeServer(handler, { requestTimeoutMs: 5_000, ...options });
  node.server.listen(0, '127.0.0.1');
  await once(node.server, 'listening');
  return { node, port: (node.server.address() as AddressInfo).port };
}

/** A connection from `localAddress`, with everything it received and whether it was closed. */
async function client(port: number, localAddress = '127.0.0.1') {
  const socket = connect({ port, host: '127.0.0.1', localAddress });
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  socket.on('error', () => {});
  const closed = once(socket, 'close').then(() => true);
  await once(socket, 'connect');
  return {
    socket,
    closed,
    received: () => received,
    /** Resolves once what was received matches `pattern` (or the connection closed). */
    async until(pattern: RegExp): Promise<string> {
      while (!pattern.test(received) && !socket.destroyed) {
        await Promise.race([once(socket, 'data'), closed]);
      }
      return received;
    },
  };
}

describe('createNodeServer(): a handler that fails', () => {
  it('closes the connection of a handler that throws at once, or rejects, and goes on serving', async () => {
    const { node, port } = await serving((request) => {
      const { pathname } = new URL(request.url);
      if (pathname === '/throws') throw new Error('at once');
      if (pathname === '/rejects') return Promise.reject(new Error('later'));
      return Promise.resolve(text('fine'));
    });
    try {
      for (const path of ['/throws', '/rejects']) {
        const c = await client(port);
        c.socket.write(`GET ${path} HTTP/1.1\r\nHost: a\r\n\r\n`);
        assert.equal(await c.closed, true, path);
        assert.equal(c.received(), '', `${path}: nothing written`);
      }
      const c = await client(port);
      c.socket.write('GET /fine HTTP/1.1\r\nHost: a\r\n\r\n');
      assert.match(await c.until(/fine$/), /^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nfine$/);
      c.socket.destroy();
    } finally {
      await node.close();
    }
  });
});

describe('createNodeServer(): content in memory', () => {
  it('writes a text as its UTF-8 bytes with their length, whether or not its bytes were reached for', async () => {
    const body = '{"name":"Café ☕ 😀"}';
    const { node, port } = await serving((request) => {
      const response = bufferedResponse(body, { headers: { 'content-type': 'application/json' } });
      // Reaching for the bytes (as a tag made from them does) sends the bytes instead of the text.
      if (new URL(request.url).pathname === '/bytes') contentOf(response);
      return Promise.resolve(response);
    });
    try {
      for (const path of ['/text', '/bytes']) {
        const c = await client(port);
        c.socket.write(`GET ${path} HTTP/1.1\r\nHost: a\r\n\r\n`);
        const expected = Buffer.from(body, 'utf8').toString('latin1');
        const received = await c.until(/\}$/);
        assert.match(received, /^HTTP\/1\.1 200 OK\r\n/, path);
        assert.match(received, /\r\ncontent-length: 25\r\n/i, path);
        assert.equal(received.slice(received.indexOf('\r\n\r\n') + 4), expected, path);
        c.socket.destroy();
      }
      const c = await client(port);
      c.socket.write('HEAD /text HTTP/1.1\r\nHost: a\r\n\r\nGET /text HTTP/1.1\r\nHost: a\r\n\r\n');
      const both = await c.until(/\}$/);
      const [head, second] = both.split(/(?=HTTP\/1\.1 200)/);
      assert.match(head as string, /\r\ncontent-length: 25\r\n[\s\S]*\r\n\r\n$/i, 'HEAD: the length, no content');
      assert.match(second as string, /^HTTP\/1\.1 200 OK\r\n/);
      c.socket.destroy();
    } finally {
      await node.close();
    }
  });
});

describe('createNodeServer(): connections (contract §11)', () => {
  it('past MAX_CONNECTIONS, closes the oldest idle keep-alive connection to make room for a new one', async () => {
    const { node, port } = await serving(async () => text('ok'), { maxConnections: 2 });
    try {
      const [first, second] = [await client(port), await client(port)];
      for (const c of [first, second]) {
        c.socket.write('GET / HTTP/1.1\r\nHost: a\r\n\r\n');
        assert.match(await c.until(/\r\n\r\nok/), /^HTTP\/1\.1 200 OK/);
      }
      // Both idle between requests now, the first the longest: it goes, and the newcomer is served in full.
      const third = await client(port);
      assert.equal(await first.closed, true);
      third.socket.write('GET / HTTP/1.1\r\nHost: a\r\n\r\n');
      assert.match(await third.until(/\r\n\r\nok/), /^HTTP\/1\.1 200 OK/);
      assert.equal(second.socket.destroyed, false);
      for (const c of [second, third]) c.socket.destroy();
    } finally {
      await node.close();
    }
  });

  it('past MAX_CONNECTIONS with none idle: the health reserve, one answer each; past it, closed at once', async () => {
    const refused: string[] = [];
    const { node, port } = await serving(async (_request, info) => text(info.healthOnly === true ? 'health' : 'ok'), {
      maxConnections: 2,
      onRefused: (cap) => refused.push(cap),
    });
    try {
      // Two connections that have sent nothing yet: not idle, not closed to make room.
      const held = [await client(port), await client(port)];
      const reserve = await client(port);
      reserve.socket.write('GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n');
      assert.match(await reserve.until(/\r\n\r\nhealth/), /^HTTP\/1\.1 200 OK\r\n(.*\r\n)*connection: close\r\n/i);
      // One answer, then the room goes to the next check.
      assert.equal(await reserve.closed, true);
      assert.deepEqual(refused, ['process']);
      // The reserve has HEALTH_RESERVE places; past them a connection is closed as it arrives.
      const more = await Promise.all(Array.from({ length: HEALTH_RESERVE }, () => client(port)));
      const past = await client(port);
      assert.equal(await past.closed, true);
      assert.equal(past.received(), '');
      for (const c of [...held, ...more]) c.socket.destroy();
    } finally {
      await node.close();
    }
  });

  it("closes an address's connection past MAX_CONNECTIONS_PER_ADDRESS; other addresses and proxies go on", async () => {
    const refused: string[] = [];
    const { node, port } = await serving(async () => text('ok'), {
      maxConnectionsPerAddress: 2,
      sharedAddress: (address) => address === '127.0.0.4',
      onRefused: (cap) => refused.push(cap),
    });
    try {
      const mine = [await client(port, '127.0.0.2'), await client(port, '127.0.0.2')];
      const third = await client(port, '127.0.0.2');
      assert.equal(await third.closed, true);
      const other = await client(port, '127.0.0.3');
      other.socket.write('GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n');
      assert.match(await other.until(/\r\n\r\nok/), /^HTTP\/1\.1 200 OK/);
      const proxied = [1, 2, 3].map(() => client(port, '127.0.0.4'));
      for (const p of await Promise.all(proxied)) {
        p.socket.write('GET / HTTP/1.1\r\nHost: a\r\n\r\n');
        assert.match(await p.until(/\r\n\r\nok/), /^HTTP\/1\.1 200 OK/);
        p.socket.destroy();
      }
      assert.deepEqual(refused, ['address']);
      // A closed connection gives its place back.
      const gone = once(mine[0]?.socket as NonNullable<(typeof mine)[0]>['socket'], 'close');
      mine[0]?.socket.destroy();
      await gone;
      for (let i = 0; i < 100 && node.connections > 2; i++) await new Promise((resolve) => setImmediate(resolve));
      const again = await client(port, '127.0.0.2');
      again.socket.write('GET / HTTP/1.1\r\nHost: a\r\n\r\n');
      assert.match(await again.until(/\r\n\r\nok/), /^HTTP\/1\.1 200 OK/);
      for (const c of [...mine, other, again]) c.socket.destroy();
    } finally {
      await node.close();
    }
  });

  it('answers 408 and closes a connection that has not sent a whole request head in time', async () => {
    const { node, port } = await serving(async () => text('ok'), { headersTimeoutMs: 200 });
    try {
      const slow = await client(port);
      slow.socket.write('GET / HTTP/1.1\r\nHost: a\r\n');
      assert.equal(await slow.closed, true);
      assert.match(slow.received(), /^HTTP\/1\.1 408 Request Timeout\r\n/);
      const silent = await client(port);
      assert.equal(await silent.closed, true);
    } finally {
      await node.close();
    }
  });
});

describe('createNodeServer(): bodies not read (contract §11)', () => {
  /** Answers 401 without reading the body, or reads it whole and answers its length, by path. */
  const handler: Parameters<typeof createNodeServer>[0] = async (request) => {
    if (new URL(request.url).pathname === '/refuse') return text('no', 401);
    const source = bodySourceOf(request);
    let length = 0;
    if (source !== null) await source.pump((piece) => (length += piece.byteLength)).done;
    return text(String(length));
  };

  it('sends 100 Continue only when the body is read, and answers a refusal without it, closing', async () => {
    const { node, port } = await serving(handler);
    try {
      const refused = await client(port);
      refused.socket.write('POST /refuse HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n');
      assert.equal(await refused.closed, true);
      assert.match(refused.received(), /^HTTP\/1\.1 401 Unauthorized\r\n/);
      assert.match(refused.received(), /\r\nconnection: close\r\n/i);
      const read = await client(port);
      read.socket.write('POST /read HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n');
      assert.equal(await read.until(/^HTTP\/1\.1 100 Continue\r\n\r\n/), 'HTTP/1.1 100 Continue\r\n\r\n');
      read.socket.write('hello');
      assert.match(await read.until(/\r\n\r\n5$/), /HTTP\/1\.1 200 OK\r\n/);
      read.socket.destroy();
    } finally {
      await node.close();
    }
  });

  it('lets a client still sending a large body read its refusal (a lingering close, not a reset)', async () => {
    // A linger far longer than the test: each connection must end because its client closed, not by the clock.
    const { node, port } = await serving(handler, { lingerMs: 600_000 });
    try {
      const head = 'POST /refuse HTTP/1.1\r\nHost: a\r\nContent-Length: 8388608\r\n\r\n';
      const target = { host: '127.0.0.1', port };
      const outcomes = await Promise.all(
        Array.from({ length: 20 }, () => rawExchange(target, head, bodyParts(8_388_608))),
      );
      assert.deepEqual(tally(outcomes), { 401: 20 });
      // Each client closed once it had its answer; the server, reading on, sees it and closes too.
      for (let i = 0; i < 500 && node.connections > 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(node.connections, 0);
    } finally {
      await node.close();
    }
  });

  it('drains a small unread body and keeps the connection; ends it after a large or chunked one', async () => {
    const { node, port } = await serving(handler);
    try {
      const small = await client(port);
      small.socket.write('POST /refuse HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n0123456789');
      small.socket.write('POST /read HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nab');
      const both = await small.until(/\r\n\r\n2$/);
      assert.deepEqual(both.match(/HTTP\/1\.1 \d{3}/g), ['HTTP/1.1 401', 'HTTP/1.1 200']);
      assert.doesNotMatch(both, /connection: close/i);
      small.socket.destroy();
      const large = await client(port);
      large.socket.write('POST /refuse HTTP/1.1\r\nHost: a\r\nContent-Length: 1048576\r\n\r\nxyz');
      assert.equal(await large.closed, true);
      assert.match(large.received(), /^HTTP\/1\.1 401 Unauthorized\r\n(.*\r\n)*connection: close\r\n/i);
      const chunked = await client(port);
      chunked.socket.write('POST /refuse HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n');
      assert.equal(await chunked.closed, true);
      assert.match(chunked.received(), /^HTTP\/1\.1 401 Unauthorized\r\n(.*\r\n)*connection: close\r\n/i);
    } finally {
      await node.close();
    }
  });
});
