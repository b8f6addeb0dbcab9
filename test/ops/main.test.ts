/**
 * The service as `make run` starts it: a child process on an embedded
 * database in a temporary DATA_DIR. First creation prints the demo tokens
 * once; the data directory is locked while the server runs; SIGTERM lets a
 * request in flight finish and exits 0.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../../src/cli.ts';
import { REAL_SERVER_URL } from '../support/database.ts';
import { spawnService, startService, type ServiceProcess } from '../support/process.ts';

const startChild = (dataDir: string) => startService({ DATA_DIR: dataDir, LOG_LEVEL: 'info' });

describe('the service process', {
  skip: REAL_SERVER_URL ? 'embedded database only: runs in the embedded pass' : false,
}, () => {
  let dataDir: string;
  let first: ServiceProcess;
  let adminToken: string;

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'orders-main-'));
    first = await startChild(dataDir);
  });

  after(() => {
    if (first.process.exitCode === null) first.process.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('prints an admin and a customer token on first creation', async () => {
    const admin = /admin: +(ord_[A-Za-z0-9_-]{54})\n/.exec(first.stderr());
    const customer = /customer: +(ord_[A-Za-z0-9_-]{54})\n/.exec(first.stderr());
    assert.ok(admin && customer, first.stderr());
    adminToken = admin[1] as string;
    const users = await fetch(`${first.url}/v1/users`, { headers: { authorization: `Bearer ${adminToken}` } });
    assert.equal(users.status, 200);
    assert.equal((await users.json()).meta.total, 2);
    const mine = await fetch(`${first.url}/v1/users`, { headers: { authorization: `Bearer ${customer[1]}` } });
    assert.deepEqual(
      (await mine.json()).data.map((u: { email: string }) => u.email),
      ['customer@example.com'],
    );
  });

  it("takes the document's example order as it is with either demo token (Swagger UI's Try it out)", async () => {
    const document = await (await fetch(`${first.url}/openapi.json`)).json();
    const example = document.paths['/v2/orders'].post.requestBody.content['application/json'].example;
    assert.deepEqual(example, { customerId: 2, items: [{ productId: 1, qty: 2 }] });
    const customer = /customer: +(ord_[A-Za-z0-9_-]{54})\n/.exec(first.stderr())?.[1] as string;
    for (const token of [adminToken, customer]) {
      const response = await fetch(`${first.url}/v2/orders`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(example),
      });
      assert.equal(response.status, 201, await response.clone().text());
      assert.equal(((await response.json()) as { customerId: number }).customerId, 2);
    }
  });

  it('serves the catalog without a token', async () => {
    const response = await fetch(`${first.url}/v1/products`);
    assert.equal(response.status, 200);
    assert.equal((await response.json()).meta.total, 21);
  });

  it('keeps the command-line tool off its data directory while it runs', async () => {
    let err = '';
    const status = await runCli(['migrate'], { DATA_DIR: dataDir }, { out: () => {}, err: (t) => (err += t) });
    assert.equal(status, 1);
    assert.match(
      err,
      new RegExp(
        String.raw`^orders: the embedded database in .* is in use by process \d+; ` +
          String.raw`stop it first \(PGlite serves one process at a time\)\n$`,
      ),
    );
  });

  it('on SIGTERM lets a request in flight finish, then exits 0', async () => {
    const { port } = new URL(first.url);
    // A request whose body is still arriving is in flight. The server's "100 Continue" tells that it has
    // routed and authenticated the request from its head, and started to read the body (contract §11).
    const req = request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/v1/orders',
      headers: {
        authorization: `Bearer ${adminToken}`,
        'content-type': 'application/json',
        'transfer-encoding': 'chunked',
        expect: '100-continue',
      },
    });
    const responded = once(req, 'response');
    req.flushHeaders();
    await once(req, 'continue');
    req.write('{"partial":');
    const stopping = new Promise<void>((resolve) => {
      const check = () => first.stdout().includes('"message":"shutting down"') && resolve();
      first.process.stdout.on('data', check);
      check();
    });
    first.process.kill('SIGTERM');
    await stopping;
    req.end('true}');
    const [response] = (await responded) as [import('node:http').IncomingMessage];
    response.resume();
    // The whole body was read and judged: a member the order does not have.
    assert.equal(response.statusCode, 422);
    const [code] = await once(first.process, 'exit');
    assert.equal(code, 0);
    assert.match(first.stdout(), /"message":"shutting down","signal":"SIGTERM"/);
  });

  it('does not print tokens again on the next start, and the old ones still work', async () => {
    const second = await startChild(dataDir);
    try {
      assert.ok(!second.stderr().includes('ord_'), second.stderr());
      const response = await fetch(`${second.url}/v1/users`, { headers: { authorization: `Bearer ${adminToken}` } });
      assert.equal(response.status, 200);
    } finally {
      second.process.kill('SIGTERM');
      const [code] = await once(second.process, 'exit');
      assert.equal(code, 0);
    }
  });
});

describe('an invalid configuration', () => {
  it('stops start-up with one line naming the variable', async () => {
    const child = spawnService({ LOG_LEVEL: 'loud' });
    const [code] = await once(child.process, 'exit');
    assert.equal(code, 2);
    assert.equal(
      child.stderr(),
      'orders: invalid configuration: LOG_LEVEL must be one of debug, info, warn, error, silent, got "loud"\n',
    );
  });
});
