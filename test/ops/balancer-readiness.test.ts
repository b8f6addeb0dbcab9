/**
 * The documented HAProxy (test/fixtures/haproxy.cfg.template) routes around a process cut from its database:
 * two processes of the built program, each reaching the database through a link of its own (a TCP proxy the test
 * pauses: a partition), behind HAProxy checking `GET /readyz`. A process cut off is taken out and the other serves
 * every request; with both cut off, HAProxy fails open and each answers its own 503 problem with `Retry-After`
 * (not HAProxy's bare 503); a link healed brings its process back.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, REAL_SERVER_URL, TEST_PREPARE, type TestDatabase } from '../support/database.ts';
import { HAPROXY_MISSING, startHaproxy, type Haproxy } from '../support/haproxy.ts';
import { rawRequest } from '../support/http.ts';
import { startService, type ServiceProcess } from '../support/process.ts';
import { startProxy, type TcpProxy } from '../support/proxy.ts';
import { until } from '../support/tools.ts';

const PROGRAM = new URL('../../dist/orders.mjs', import.meta.url).pathname;
const SKIP =
  HAPROXY_MISSING ||
  (REAL_SERVER_URL === undefined && 'needs a real PostgreSQL server: the embedded one serves one process');

describe('HAProxy routes around a process cut from its database (GET /readyz)', { skip: SKIP }, () => {
  let database: TestDatabase;
  const links: TcpProxy[] = [];
  const services: ServiceProcess[] = [];
  let balancer: Haproxy;

  before(async () => {
    database = await createTestDatabase();
    const target = database.target as { host: string; port: number };
    for (let i = 0; i < 2; i++) {
      const link = await startProxy(target);
      links.push(link);
      const url = new URL(database.url);
      url.host = `127.0.0.1:${link.port}`;
      services.push(
        await startService(
          {
            DATABASE_URL: url.toString(),
            ...(TEST_PREPARE ? {} : { DB_PREPARE: 'off' }),
            TRUST_PROXY: '127.0.0.1',
            RATE_LIMIT: 'off',
            LOG_LEVEL: 'info',
          },
          undefined,
          undefined,
          [process.execPath, PROGRAM],
        ),
      );
    }
    balancer = await startHaproxy(services.map((s) => s.url));
    await until(
      async () => JSON.stringify(await balancer.states()) === '{"orders1":"UP","orders2":"UP"}',
      () => `both processes never became ready: ${balancer.log()}`,
    );
  });
  after(async () => {
    await balancer?.stop();
    for (const service of services) {
      if (service.process.exitCode !== null) continue;
      const exited = once(service.process, 'exit');
      service.process.kill('SIGTERM');
      await exited;
    }
    for (const link of links) await link.close();
    await database?.drop();
  });

  const state = async (name: string) => (await balancer.states())[name];
  /** Requests for the catalog that reached `service`, from its request log. */
  const served = (service: ServiceProcess) => service.stdout().split('"path":"/v1/products"').length - 1;
  const get = (path: string) => rawRequest(`${balancer.url}${path}`);

  it('takes out the process cut off, and the other serves every request', async () => {
    links[0]!.pause();
    await until(
      async () => (await state('orders1')) === 'DOWN',
      () => `orders1 was never taken out: ${balancer.log().slice(-2_000)}`,
    );
    assert.equal(await state('orders2'), 'UP');
    const [before0, before1] = [served(services[0]!), served(services[1]!)];
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) statuses.push((await get('/v1/products')).status);
    assert.deepEqual(statuses, Array(20).fill(200));
    // Each request's log line comes just after its answer.
    await until(
      async () => served(services[1]!) - before1 === 20,
      () => `orders2 logged ${served(services[1]!) - before1} of the 20`,
    );
    assert.equal(served(services[0]!) - before0, 0);
  });

  it('with every process cut off, fails open: each answers its own 503 problem with Retry-After', async () => {
    links[1]!.pause();
    await until(
      async () => (await state('orders2')) === 'DOWN',
      () => 'orders2 was never taken out',
    );
    assert.deepEqual(await balancer.states('orders_live'), { orders1: 'UP', orders2: 'UP' });
    const answer = await get('/v1/products');
    assert.equal(answer.status, 503);
    assert.equal(answer.headers['content-type'], 'application/problem+json');
    assert.equal(JSON.parse(answer.text).type, '/problems/unavailable');
    assert.match(String(answer.headers['retry-after']), /^\d+$/);
  });

  it('brings a process back once its link heals, after two good checks', async () => {
    links[0]!.resume();
    await until(
      async () => (await state('orders1')) === 'UP',
      () => 'orders1 never came back',
    );
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await get('/v1/products')).status);
    assert.deepEqual(statuses, Array(10).fill(200));
    links[1]!.resume();
    await until(
      async () => (await state('orders2')) === 'UP',
      () => 'orders2 never came back',
    );
  });
});
