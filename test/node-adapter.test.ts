/**
 * The node:http adapter's table of open connections (used by shutdown)
 * forgets every connection that closed, whatever way it ended: no client
 * can make it grow.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { createNodeServer } from '../src/http/node-adapter.ts';

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
