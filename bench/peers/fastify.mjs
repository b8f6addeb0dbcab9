// The peer (contract §14): what a Node team would write in ten minutes instead
// of using the service. Fastify 5 and the `postgres` driver, one route,
// GET /orders/:id: the order with its items as JSON by primary key, in the
// v1 shape, no auth, no ETag, no rate limit, no request log. Plain
// JavaScript, so it runs on bare node. A yardstick, not service code: its
// SQL is its own copy of GetOrder (sql/queries/orders.sql) without the
// ownership filter, so changes to the service do not move it.
//
// Environment: DATABASE_URL (a real PostgreSQL server; required), DB_POOL_MAX
// (10, as the service), PORT (0: any free port). Prints
// "listening on http://127.0.0.1:PORT" on stdout.
import Fastify from 'fastify';
import postgres from 'postgres';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  process.stderr.write('peer: DATABASE_URL is required (the embedded database serves one process)\n');
  process.exit(2);
}

const BIGINT_OID = 20;
const sql = postgres(databaseUrl, {
  max: Number(process.env.DB_POOL_MAX ?? 10),
  onnotice: () => {},
  // Identifiers as JSON numbers, as the service sends them.
  types: { bigint: { to: BIGINT_OID, from: [BIGINT_OID], serialize: String, parse: Number } },
});

const app = Fastify({ logger: false });

app.get('/orders/:id', async (request, reply) => {
  const id = Number(request.params.id);
  if (!Number.isSafeInteger(id) || id < 1) return reply.code(404).send({ error: 'not found' });
  const [row] = await sql`
    SELECT o.id, o.customer_id, o.status, o.currency, o.total::text AS total, o.created_at, o.updated_at,
           coalesce((SELECT json_agg(json_build_object(
                       'id', i.id, 'orderId', i.order_id, 'productId', i.product_id,
                       'qty', i.qty, 'unitPrice', i.unit_price::text) ORDER BY i.id)
                     FROM order_items i WHERE i.order_id = o.id), '[]'::json) AS items
    FROM orders o
    WHERE o.id = ${id}`;
  if (row === undefined) return reply.code(404).send({ error: 'not found' });
  return {
    id: row.id,
    customerId: row.customer_id,
    status: row.status,
    currency: row.currency,
    total: Number(row.total),
    items: row.items.map((item) => ({ ...item, unitPrice: Number(item.unitPrice) })),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
});

const close = async () => {
  await app.close();
  await sql.end({ timeout: 5 });
  process.exit(0);
};
process.on('SIGTERM', close);
process.on('SIGINT', close);

const url = await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 0) });
process.stdout.write(`listening on ${url}\n`);
