// What the two peers share (contract §14): the database, the SQL and the
// data logic of their three routes, so that bench/peers/fastify.mjs and
// bench/peers/hono.mjs differ only in the framework around it. Written as a
// Node team would in an afternoon, with the `postgres` driver and no auth, no
// ETag, no rate limit, no request log. A yardstick, not service code: its SQL
// is its own, so changes to the service do not move it.
//
// - GET /orders/{id}: the order with its items as JSON, by primary key, in
//   the service's v1 shape (its own copy of GetOrder, sql/queries/orders.sql,
//   without the ownership filter).
// - GET /orders?status=&sort=&pageSize=&page=: a page of the service's own
//   `orders` (its tables and indexes) with their items, and an exact total by
//   count(*), two queries side by side.
// - POST /orders with an Idempotency-Key: one transaction, seven statements
//   awaited in turn, on tables of its own (peer_*, created at start): claim
//   the key, read the catalog prices, insert the order, its items, set its
//   total, write an order.created event, store the response.
//
// Every route returns { status, body }: the framework sends body as JSON.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIGINT_OID = 20;
const MAX_ITEMS = 100;
const MAX_QTY = 1000;
const MAX_PAGE_SIZE = 100;
const STATUSES = ['pending', 'paid', 'shipped', 'delivered', 'cancelled'];
const SORTS = {
  id: 'o.id ASC',
  '-id': 'o.id DESC',
  createdAt: 'o.created_at ASC, o.id ASC',
  '-createdAt': 'o.created_at DESC, o.id DESC',
};
/** No auth: every order the peer creates belongs to this customer. */
const CUSTOMER_ID = 1;
const PATCH_MARK = 'orders-service patch';

/**
 * The driver the peers load, checked at start: the project's own build in
 * node_modules/postgres with every fix of patches/ applied by patch-package
 * (the build dist/orders.mjs bundles), never another copy. An unfixed
 * driver slows down under steady load and would flatter the service. Each
 * patched line carries PATCH_MARK: the ESM sources (the `import` entry)
 * must hold as many as the patches add to them.
 */
export const driver = (() => {
  const entry = fileURLToPath(import.meta.resolve('postgres'));
  // Resolved through any symbolic link, as the import itself is.
  const dir = `${realpathSync(`${ROOT}node_modules/postgres`)}/`;
  if (!entry.startsWith(`${dir}src/`))
    throw new Error(`peer: 'postgres' resolves to ${entry}, not the project's build in ${dir}src/`);
  const marks = (text) => text.split(PATCH_MARK).length - 1;
  const found = readdirSync(`${dir}src`)
    .filter((file) => file.endsWith('.js'))
    .reduce((n, file) => n + marks(readFileSync(`${dir}src/${file}`, 'utf8')), 0);
  let expected = 0;
  for (const patch of readdirSync(`${ROOT}patches`).filter((file) => file.startsWith('postgres+'))) {
    // Only the hunks of node_modules/postgres/src/ (the patches change cjs/ alike).
    for (const file of readFileSync(`${ROOT}patches/${patch}`, 'utf8')
      .split(/^diff --git /m)
      .slice(1)) {
      if (!file.startsWith('a/node_modules/postgres/src/')) continue;
      for (const line of file.split('\n'))
        if (line.includes(PATCH_MARK) && !line.startsWith('+++') && !line.startsWith('---'))
          expected += line.startsWith('+') ? 1 : line.startsWith('-') ? -1 : 0;
    }
  }
  if (found !== expected)
    throw new Error(`peer: ${dir}src carries ${found} patched lines, patches/ adds ${expected}: run npm ci`);
  const { version } = JSON.parse(readFileSync(`${dir}package.json`, 'utf8'));
  return { path: 'node_modules/postgres', version, patchedLines: found };
})();

/** Opens the pool, creates the peer's own tables, and returns the three routes. */
export async function openPeer(name) {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) {
    process.stderr.write('peer: DATABASE_URL is required (the embedded database serves one process)\n');
    process.exit(2);
  }
  const sql = postgres(databaseUrl, {
    max: Number(process.env.DB_POOL_MAX ?? 10),
    onnotice: () => {},
    // bench/load.mjs finds this process's backends by it, for PostgreSQL's CPU per request.
    connection: { application_name: `bench-peer-${name}` },
    // Identifiers as JSON numbers, as the service sends them.
    types: { bigint: { to: BIGINT_OID, from: [BIGINT_OID], serialize: String, parse: Number } },
  });
  await createTables(sql);
  return {
    getOrder: (id) => getOrder(sql, id),
    listOrders: (query) => listOrders(sql, query),
    createOrder: (key, body) => createOrder(sql, key, body),
    close: () => sql.end({ timeout: 5 }),
    driver: `postgres ${driver.version} from ${driver.path}, ${driver.patchedLines} patched lines as patches/`,
  };
}

async function createTables(sql) {
  // body is json, not jsonb: a replay sends the keys in the order they were stored.
  await sql`
    CREATE TABLE IF NOT EXISTS peer_idempotency_keys (
      key text PRIMARY KEY,
      fingerprint text NOT NULL,
      status integer,
      body json,
      created_at timestamptz NOT NULL DEFAULT now())`;
  await sql`
    CREATE TABLE IF NOT EXISTS peer_orders (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      customer_id bigint NOT NULL,
      status text NOT NULL DEFAULT 'pending',
      currency char(3) NOT NULL,
      total numeric(12,2) NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now())`;
  await sql`
    CREATE TABLE IF NOT EXISTS peer_order_items (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      order_id bigint NOT NULL REFERENCES peer_orders (id),
      product_id bigint NOT NULL,
      qty integer NOT NULL,
      unit_price numeric(12,2) NOT NULL)`;
  await sql`CREATE INDEX IF NOT EXISTS peer_order_items_order_id_idx ON peer_order_items (order_id)`;
  await sql`
    CREATE TABLE IF NOT EXISTS peer_events (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      type text NOT NULL,
      data jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now())`;
}

const notFound = () => ({ status: 404, body: { error: 'not found' } });
const invalid = (message) => ({ status: 422, body: { error: message } });

/** The v1 shape: money as JSON numbers, times as ISO strings (JSON.stringify of a Date). */
const orderJson = (row, items) => ({
  id: row.id,
  customerId: row.customer_id,
  status: row.status,
  currency: row.currency,
  total: Number(row.total),
  items: items.map((item) => ({
    id: item.id,
    orderId: item.orderId,
    productId: item.productId,
    qty: item.qty,
    unitPrice: Number(item.unitPrice),
  })),
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

async function getOrder(sql, idText) {
  const id = Number(idText);
  if (!Number.isSafeInteger(id) || id < 1) return notFound();
  const [row] = await sql`
    SELECT o.id, o.customer_id, o.status, o.currency, o.total::text AS total, o.created_at, o.updated_at,
           coalesce((SELECT json_agg(json_build_object(
                       'id', i.id, 'orderId', i.order_id, 'productId', i.product_id,
                       'qty', i.qty, 'unitPrice', i.unit_price::text) ORDER BY i.id)
                     FROM order_items i WHERE i.order_id = o.id), '[]'::json) AS items
    FROM orders o
    WHERE o.id = ${id}`;
  return row === undefined ? notFound() : { status: 200, body: orderJson(row, row.items) };
}

async function listOrders(sql, query) {
  const { status, sort = 'id' } = query;
  const pageSize = Number(query.pageSize ?? 20);
  const page = Number(query.page ?? 1);
  if (status !== undefined && !STATUSES.includes(status)) return invalid(`status must be one of ${STATUSES}`);
  if (!Object.hasOwn(SORTS, sort)) return invalid(`sort must be one of ${Object.keys(SORTS)}`);
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_PAGE_SIZE) return invalid('bad pageSize');
  if (!Number.isInteger(page) || page < 1 || page > 10_000) return invalid('bad page');
  // A fragment per query: the driver binds a fragment's values into the query that holds it.
  const filter = () => (status === undefined ? sql`` : sql`WHERE o.status = ${status}`);
  const [rows, [{ count }]] = await Promise.all([
    sql`
      SELECT o.id, o.customer_id, o.status, o.currency, o.total::text AS total, o.created_at, o.updated_at,
             coalesce((SELECT json_agg(json_build_object(
                         'id', i.id, 'orderId', i.order_id, 'productId', i.product_id,
                         'qty', i.qty, 'unitPrice', i.unit_price::text) ORDER BY i.id)
                       FROM order_items i WHERE i.order_id = o.id), '[]'::json) AS items
      FROM orders o
      ${filter()}
      ORDER BY ${sql.unsafe(SORTS[sort])}
      LIMIT ${pageSize} OFFSET ${(page - 1) * pageSize}`,
    sql`SELECT count(*) FROM orders o ${filter()}`,
  ]);
  return {
    status: 200,
    body: {
      data: rows.map((row) => orderJson(row, row.items)),
      meta: { total: count, page, pageSize, pageCount: Math.ceil(count / pageSize) },
    },
  };
}

/** The items of a POST body, or a message saying what is wrong with them. */
function parseItems(body) {
  const items = body?.items;
  if (!Array.isArray(items) || items.length === 0 || items.length > MAX_ITEMS)
    return `items must be an array of 1 to ${MAX_ITEMS} items`;
  for (const item of items) {
    if (!Number.isSafeInteger(item?.productId) || item.productId < 1) return 'productId must be a positive integer';
    if (!Number.isInteger(item.qty) || item.qty < 1 || item.qty > MAX_QTY) return `qty must be 1 to ${MAX_QTY}`;
  }
  return items;
}

class Refused extends Error {
  constructor(message) {
    super(message);
    this.response = invalid(message);
  }
}

async function createOrder(sql, key, body) {
  if (typeof key !== 'string' || key.length === 0 || key.length > 255)
    return { status: 400, body: { error: 'Idempotency-Key is required' } };
  const items = parseItems(body);
  if (typeof items === 'string') return invalid(items);
  const fingerprint = createHash('sha256').update(JSON.stringify(body)).digest('base64url');
  try {
    return await sql.begin(async (tx) => {
      // 1. The key: a concurrent request with the same key waits here until the first commits.
      const claimed = await tx`
        INSERT INTO peer_idempotency_keys (key, fingerprint) VALUES (${key}, ${fingerprint})
        ON CONFLICT (key) DO NOTHING
        RETURNING key`;
      if (claimed.length === 0) {
        const [stored] = await tx`SELECT fingerprint, status, body FROM peer_idempotency_keys WHERE key = ${key}`;
        if (stored.fingerprint !== fingerprint) return invalid('Idempotency-Key reused with another body');
        return { status: stored.status, body: stored.body };
      }
      // 2. The catalog prices.
      const ids = [...new Set(items.map((item) => item.productId))];
      const products = await tx`SELECT id, price::text AS price, currency FROM products WHERE id IN ${tx(ids)}`;
      const byId = new Map(products.map((p) => [p.id, p]));
      const unknown = ids.filter((id) => !byId.has(id));
      if (unknown.length > 0) throw new Refused(`unknown products: ${unknown.join(', ')}`);
      const currencies = new Set(products.map((p) => p.currency));
      if (currencies.size !== 1) throw new Refused('the items must share one currency');
      // 3. The order.
      const [order] = await tx`
        INSERT INTO peer_orders (customer_id, currency) VALUES (${CUSTOMER_ID}, ${products[0].currency})
        RETURNING id, customer_id, status, currency, created_at`;
      // 4. Its items, at the catalog's prices.
      const lines = items.map((item) => ({
        order_id: order.id,
        product_id: item.productId,
        qty: item.qty,
        unit_price: byId.get(item.productId).price,
      }));
      const saved = await tx`
        INSERT INTO peer_order_items ${tx(lines, 'order_id', 'product_id', 'qty', 'unit_price')}
        RETURNING id, order_id AS "orderId", product_id AS "productId", qty, unit_price::text AS "unitPrice"`;
      // 5. The total.
      const [totals] = await tx`
        UPDATE peer_orders
        SET total = (SELECT sum(qty * unit_price) FROM peer_order_items WHERE order_id = ${order.id}),
            updated_at = now()
        WHERE id = ${order.id}
        RETURNING total::text AS total, updated_at`;
      const json = orderJson(
        { ...order, ...totals },
        saved.sort((a, b) => a.id - b.id),
      );
      // 6. The order.created event.
      await tx`INSERT INTO peer_events (type, data) VALUES ('order.created', ${tx.json(json)})`;
      // 7. The stored response, for a replay of the key.
      await tx`UPDATE peer_idempotency_keys SET status = 201, body = ${tx.json(json)} WHERE key = ${key}`;
      return { status: 201, body: json };
    });
  } catch (error) {
    if (error instanceof Refused) return error.response;
    throw error;
  }
}
