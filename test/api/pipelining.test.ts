/**
 * contract §11: memory per connection is bounded whatever a client pipelines.
 * Issue 20's attack: connections that each send thousands of pipelined
 * `GET /openapi.json` (a 1 MB answer) in one write and never read. Before,
 * every request was started at once and built its own copy of the document:
 * 4 connections took the process from 62 MB to 1.3 GB. Now a connection's
 * next request waits until the answer before it is written down to 64 KiB,
 * the connection is not read meanwhile, one with more than 64 requests
 * waiting is closed, and the document's bytes are shared.
 */
import assert from 'node:assert/strict';
import { createConnection, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { MAX_PIPELINED, PIPELINE_BUDGET } from '../../src/http/connections.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { slack } from '../support/time.ts';

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

// A connection that never gets what it waits for fails its test instead of holding the run open.
describe('a client that pipelines and never reads (contract §11)', { timeout: 30_000 }, () => {
  it('is cut off past 64 waiting requests, having started only what its answers allow; others served', async (test) => {
    const document = (await (await fetch(`${t.url}/openapi.json`)).arrayBuffer()).byteLength;
    assert.ok(document > PIPELINE_BUDGET * 4, `the document is ${document} bytes`);
    const rssBefore = process.memoryUsage.rss();
    const sockets = await Promise.all([1, 2, 3, 4].map(() => flood('/openapi.json', 2_000)));
    // Each connection holds more than MAX_PIPELINED requests waiting: the server closes it.
    await Promise.all(sockets.map((socket) => new Promise((resolve) => socket.once('close', resolve))));
    const started = performance.now();
    const other = await fetch(`${t.url}/v1/products/1`);
    assert.equal(other.status, 200);
    await other.arrayBuffer();
    const waited = performance.now() - started;
    const servedCount = served('/openapi.json') - 1;
    const rssGrowth = (process.memoryUsage.rss() - rssBefore) / 1e6;
    test.diagnostic(
      `${servedCount} of 8,000 served; grew by ${rssGrowth.toFixed(0)} MB; another client: ${waited.toFixed(0)} ms`,
    );
    // Of 8,000 requests, only the first of each connection (and those its kernel buffers took) were started.
    assert.ok(servedCount <= 4 * MAX_PIPELINED, `${servedCount} of 8,000 pipelined requests were served`);
    assert.ok(rssGrowth < 150, `the process grew by ${rssGrowth.toFixed(0)} MB`);
    // 350 ms times TIME_SLACK (test/support/time.ts): still catches a server busy with the flood for seconds.
    assert.ok(waited < slack(350), `another client waited ${waited.toFixed(0)} ms`);
  });

  it('keeps a connection of 64 pipelined requests that it reads: all answered, none cut', async () => {
    const { port } = new URL(t.url);
    const socket = createConnection({ host: '127.0.0.1', port: Number(port) });
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n'.repeat(MAX_PIPELINED));
    let received = '';
    socket.setEncoding('utf8');
    await new Promise<void>((resolve) => {
      socket.on('data', (chunk: string) => {
        received += chunk;
        if ((received.match(/\{"status":"ok"\}/g) ?? []).length === MAX_PIPELINED) resolve();
      });
    });
    assert.equal(socket.destroyed, false);
    socket.destroy();
  });

  it('serves a reading client its pipelined requests in order, all of them', async () => {
    const { port } = new URL(t.url);
    const socket = createConnection({ host: '127.0.0.1', port: Number(port) });
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    const paths = ['/v1/products/1', '/v1/products/2', '/healthz', '/v1/products/3', '/readyz', '/healthz'];
    socket.write(paths.map((path) => `GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`).join(''));
    let received = '';
    socket.setEncoding('utf8');
    // /readyz says the replica's state too in a run with one: {"status":"ready","replica":{…}}.
    const answers = () => [...received.matchAll(/\{"id":(\d+),|\{"status":"(ok|ready)"[,}]/g)].map((m) => m[1] ?? m[2]);
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
