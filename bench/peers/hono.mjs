// The Hono peer (contract §14): Hono 4 on @hono/node-server around the
// routes of bench/peers/common.mjs (the SQL and data logic both peers
// share), as a Node team would write it. Plain JavaScript, so it runs on
// bare node.
//
// Environment: DATABASE_URL (a real PostgreSQL server; required), DB_POOL_MAX
// (10, as the service), PORT (0: any free port). Prints "listening on
// http://127.0.0.1:PORT (driver: …)" on stdout, naming the driver build it loaded.
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { openPeer } from './common.mjs';

const peer = await openPeer('hono');
const app = new Hono();
const send = (c, { status, body }) => c.json(body, status);

app.get('/orders/:id', async (c) => send(c, await peer.getOrder(c.req.param('id'))));
app.get('/orders', async (c) => send(c, await peer.listOrders(c.req.query())));
app.post('/orders', async (c) => {
  let body;
  try {
    body = await c.req.json();
  } catch {
    return c.json({ error: 'the body is not JSON' }, 400);
  }
  return send(c, await peer.createOrder(c.req.header('idempotency-key'), body));
});

const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: Number(process.env.PORT ?? 0) }, (info) =>
  process.stdout.write(`listening on http://127.0.0.1:${info.port} (driver: ${peer.driver})\n`),
);

const close = async () => {
  server.close();
  await peer.close();
  process.exit(0);
};
process.on('SIGTERM', close);
process.on('SIGINT', close);
