/**
 * contract §1 shutdown, timed on the service as `make run` starts it (a child
 * process): with nothing in flight it exits 0 within 1 s of SIGTERM, whatever
 * keep-alive connections are open; a request in flight finishes first, and its
 * connection does not keep the process waiting afterwards.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { adminToken } from '../support/accounts.ts';
import { startService, type ServiceProcess } from '../support/process.ts';
import { slack } from '../support/time.ts';

/**
 * contract §1: "With nothing in flight it exits within 1 s." Times TIME_SLACK (test/support/time.ts): 3 s by
 * default, which still catches a process held by an idle keep-alive connection (5 s) or a forgotten timer.
 */
const EXIT_WITHIN_MS = slack(1_000);

describe('shutdown on SIGTERM', () => {
  let database: TestDatabase;
  // Every service started, so that one a failed test left running never holds the run open.
  const services: ServiceProcess[] = [];
  before(async () => {
    database = await createTestDatabase();
  });
  after(async () => {
    for (const service of services) if (service.process.exitCode === null) service.process.kill('SIGKILL');
    await database.drop();
  });

  const start = async () => {
    const service = await startService({ DATABASE_URL: database.url, RATE_LIMIT: 'off', LOG_LEVEL: 'info' });
    services.push(service);
    return service;
  };
  const port = (s: ServiceProcess) => Number(new URL(s.url).port);
  const openSocket = async (s: ServiceProcess): Promise<Socket> => {
    const socket = connect(port(s), '127.0.0.1');
    socket.on('error', () => {});
    await once(socket, 'connect');
    return socket;
  };

  it('exits 0 within 1 s, nothing in flight: a keep-alive connection idle after a request, one unused', async () => {
    const s = await start();
    // A browser's pre-connection: open, no request yet.
    const silent = await openSocket(s);
    const agent = new Agent({ keepAlive: true });
    const status = await new Promise<number>((resolve, reject) => {
      request({ host: '127.0.0.1', port: port(s), path: '/v1/products', agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      })
        .on('error', reject)
        .end();
    });
    assert.equal(status, 200);
    const exited = once(s.process, 'exit');
    const signalled = performance.now();
    s.process.kill('SIGTERM');
    const [code] = await exited;
    const elapsed = performance.now() - signalled;
    agent.destroy();
    silent.destroy();
    assert.equal(code, 0, s.stderr());
    assert.ok(elapsed < EXIT_WITHIN_MS, `exited ${Math.round(elapsed)} ms after SIGTERM`);
  });

  it('lets a request in flight finish, then closes its keep-alive connection and exits within 1 s of it', async () => {
    const s = await start();
    const token = await adminToken(database, s);
    const socket = await openSocket(s);
    socket.write(
      'POST /v1/orders HTTP/1.1\r\nHost: orders.test\r\nContent-Type: application/json\r\nContent-Length: 4\r\n' +
        `Authorization: Bearer ${token}\r\nExpect: 100-continue\r\n\r\n`,
    );
    // "100 Continue": the server has routed and authenticated the request and reads its body: it is in flight.
    const [continued] = (await once(socket, 'data')) as [Buffer];
    assert.equal(continued.toString('latin1'), 'HTTP/1.1 100 Continue\r\n\r\n');
    const stopping = new Promise<void>((resolve) => {
      const check = () => s.stdout().includes('"message":"shutting down"') && resolve();
      s.process.stdout.on('data', check);
      check();
    });
    const exited = once(s.process, 'exit');
    s.process.kill('SIGTERM');
    await stopping;
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    const closed = once(socket, 'close');
    socket.write('null');
    await once(socket, 'data');
    const answered = performance.now();
    const [code] = await exited;
    const elapsed = performance.now() - answered;
    await closed;
    assert.equal(code, 0, s.stderr());
    assert.ok(elapsed < EXIT_WITHIN_MS, `exited ${Math.round(elapsed)} ms after the response`);
    // The body (null) was read and judged: not a JSON object.
    assert.match(received, /^HTTP\/1\.1 422 Unprocessable Entity\r\n/);
    assert.match(received.slice(0, received.indexOf('\r\n\r\n')), /\r\nconnection: close(\r\n|$)/i);
  });
});
