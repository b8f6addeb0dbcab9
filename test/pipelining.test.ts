/**
 * contract §11: memory per connection is bounded whatever a client pipelines.
 * Issue 20's attack: connections that each send thousands of pipelined
 * `GET /openapi.json` (a 1 MB answer) in one write and never read. Before,
 * every request was started at once and built its own copy of the document:
 * 4 connections took the process from 62 MB to 1.3 GB. Now a connection's
 * next request waits until the answer before it is written down to 64 KiB,
 * the connection is not read meanwhile, and the document's bytes are shared.
 */
import assert from 'node:assert/strict';
import { createConnection, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { PIPELINE_BUDGET } from '../src/http/node-adapter.ts';
import { startTestServer, type TestServer } from './support/server.ts';

let t: TestServer;

before(async () => {
  t = await startTestServer();
});
after(async () => {
  await t.close();
});

/** A connection to the server that writes `count` pipelined GETs of `path` at once and never reads. */
async function flood(path: string, count: number): Promise<Socket> {
  const { port } = new URL(t.url);
  const socket = createConnection({ host: '127.0.0.1', port: Number(port) });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.on('error', () => {});
  socket.pause();
  socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`.repeat(count));
  return socket;
}

const served = (path: string) => t.logs.filter((line) => line.message === 'request' && line.path === path).length;

describe('a client that pipelines and never reads (contract §11)', () => {
  it('serves its requests one at a time, as it reads them: memory stays bounded, others are served', async (test) => {
    const document = (await (await fetch(`${t.url}/openapi.json`)).arrayBuffer()).byteLength;
    assert.ok(document > PIPELINE_BUDGET * 4, `the document is ${document} bytes`);
    const rssBefore = process.memoryUsage.rss();
    const sockets = await Promise.all([1, 2, 3, 4].map(() => flood('/openapi.json', 2_000)));
    try {
      // Until the four connections stop being served: each is blocked on an answer its client does not read.
      let last = -1;
      for (let count = served('/openapi.json'); count !== last; count = served('/openapi.json')) {
        last = count;
        const started = performance.now();
        // Another client is answered at once meanwhile.
        const other = await fetch(`${t.url}/v1/products/1`);
        assert.equal(other.status, 200);
        await other.arrayBuffer();
        assert.ok(performance.now() - started < 1_000, `another client waited ${performance.now() - started} ms`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const rssGrowth = (process.memoryUsage.rss() - rssBefore) / 1e6;
      // Of 8,000 requests, only those whose answers the kernel's buffers took were started.
      test.diagnostic(
        `${last} of 8,000 served; the process grew by ${((process.memoryUsage.rss() - rssBefore) / 1e6).toFixed(0)} MB`,
      );
      assert.ok(last < 400, `${last} of 8,000 pipelined requests were served`);
      assert.ok(rssGrowth < 150, `the process grew by ${rssGrowth.toFixed(0)} MB`);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  });

  it('serves a reading client its pipelined requests in order, all of them', async () => {
    const { port } = new URL(t.url);
    const socket = createConnection({ host: '127.0.0.1', port: Number(port) });
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    const paths = ['/v1/products/1', '/v1/products/2', '/healthz', '/v1/products/3', '/readyz', '/healthz'];
    socket.write(paths.map((path) => `GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`).join(''));
    let received = '';
    socket.setEncoding('utf8');
    const answers = () => [...received.matchAll(/\{"id":(\d+),|\{"status":"(ok|ready)"\}/g)].map((m) => m[1] ?? m[2]);
    await new Promise<void>((resolve) => {
      socket.on('data', (chunk: string) => {
        received += chunk;
        if (answers().length === paths.length) resolve();
      });
    });
    socket.destroy();
    assert.deepEqual(answers(), ['1', '2', 'ok', '3', 'ready', 'ok']);
    assert.equal((received.match(/HTTP\/1\.1 200 OK\r\n/g) ?? []).length, paths.length);
  });
});
