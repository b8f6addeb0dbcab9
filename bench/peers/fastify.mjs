// The Fastify peer (contract §14): Fastify 5 around the routes of
// bench/peers/common.mjs (the SQL and data logic both peers share), as a
// Node team would write it. Plain JavaScript, so it runs on bare node.
//
// Environment: DATABASE_URL (a real PostgreSQL server; required), DB_POOL_MAX
// (10, as the service), PORT (0: any free port). Prints "listening on
// http://127.0.0.1:PORT (driver: …)" on stdout, naming the driver build it loaded.
import Fastify from 'fastify';
import { openPeer } from './common.mjs';

const peer = await openPeer('fastify');
const app = Fastify({ logger: false });
const send = (reply, { status, body }) => reply.code(status).send(body);

app.get('/orders/:id', async (request, reply) => send(reply, await peer.getOrder(request.params.id)));
app.get('/orders', async (request, reply) => send(reply, await peer.listOrders(request.query)));
app.post('/orders', async (request, reply) =>
  send(reply, await peer.createOrder(request.headers['idempotency-key'], request.body)),
);

const close = async () => {
  await app.close();
  await peer.close();
  process.exit(0);
};
process.on('SIGTERM', close);
process.on('SIGINT', close);

const url = await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 0) });
process.stdout.write(`listening on ${url} (driver: ${peer.driver})\n`);
