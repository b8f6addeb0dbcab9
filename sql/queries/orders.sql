-- Orders and their items (contract §2, §3, §4). An order is always read with its
-- items embedded as JSON, in id order: one query, never one per order.
-- unitPrice and total travel as text so no float ever touches money.

-- name: GetOrder :opt reads
-- params: id, owner?
-- not null: total
-- $1: order id; $2: the owning customer a customer is limited to, or NULL (an admin).
-- revision is not part of the representation: it makes the entity tag (contract §9).
SELECT o.id, o.customer_id, o.status, o.currency, o.total::text AS total, o.created_at, o.updated_at, o.revision,
       it.items
FROM orders o, order_items_json(o.id) it(items)
WHERE o.id = $1
  AND ($2::bigint IS NULL OR o.customer_id = $2);

-- name: GetOrderJson :opt reads
-- params: id, owner?
-- not null: body
-- The order as API version 1 represents it (contract §2), as JSON text ready
-- to send (order_json_v1, migration 0017: the bytes of
-- src/orders/representation.ts), with the revision for its entity tag: a GET
-- sends the database's bytes as they are, with no JSON parsing of the items, no
-- Date objects and no serializing in the service. One statement per version
-- (GetOrderJsonV2 below), not a CASE on the version: the executor sets up
-- every branch of a CASE's subqueries on each run (issue 26).
-- $1: order id; $2: the owning customer a customer is limited to, or NULL (an admin).
SELECT o.revision, j.body
FROM orders o, order_json_v1(o, o.id) j(body)
WHERE o.id = $1
  AND ($2::bigint IS NULL OR o.customer_id = $2);

-- name: GetOrderJsonV2 :opt reads
-- params: id, owner?
-- not null: body
-- GetOrderJson for API version 2 (order_json_v2: money as
-- {"amount":"59.90","currency":"EUR"}). $1: order id; $2: the owning customer,
-- or NULL (an admin).
SELECT o.revision, j.body
FROM orders o, order_json_v2(o, o.id, o.currency) j(body)
WHERE o.id = $1
  AND ($2::bigint IS NULL OR o.customer_id = $2);

-- name: LockOrder :opt writes
-- params: id, owner?
-- The order's writable state, locked until the transaction ends, so that two
-- writers of one order are serialized and each sees the other's result; with
-- the revision that If-Match is compared against under the lock (contract §9).
-- $1: order id; $2: the owning customer, or NULL (an admin).
SELECT o.id, o.customer_id, o.status, o.currency, o.revision
FROM orders o
WHERE o.id = $1
  AND ($2::bigint IS NULL OR o.customer_id = $2)
FOR UPDATE;

-- name: GetOrderRevision :opt reads
-- params: id, owner?
-- The revision alone, for an If-None-Match on one order (contract §9): one
-- primary-key lookup, no items, nothing built. Ownership as in GetOrder, so
-- another customer's order is as missing here as there (404, never 304).
-- $1: order id; $2: the owning customer, or NULL (an admin).
SELECT o.revision
FROM orders o
WHERE o.id = $1
  AND ($2::bigint IS NULL OR o.customer_id = $2);

-- name: GetOrderJsonBatch :many reads
-- params: ids, owners
-- not null: n, body
-- GetOrderJson for the requests of one turn at once (src/db/batch.ts): $1 the
-- order ids, $2 for each the owning customer it is limited to, or NULL (an
-- admin); one row per order found, n the place of its request in $1. A nested
-- loop of primary-key lookups.
SELECT k.n::int AS n, o.revision, j.body
FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS k(id, owner, n)
JOIN orders o ON o.id = k.id AND (k.owner IS NULL OR o.customer_id = k.owner)
CROSS JOIN order_json_v1(o, o.id) j(body);

-- name: GetOrderJsonV2Batch :many reads
-- params: ids, owners
-- not null: n, body
-- GetOrderJsonV2 for the requests of one turn at once, as GetOrderJsonBatch.
SELECT k.n::int AS n, o.revision, j.body
FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS k(id, owner, n)
JOIN orders o ON o.id = k.id AND (k.owner IS NULL OR o.customer_id = k.owner)
CROSS JOIN order_json_v2(o, o.id, o.currency) j(body);

-- name: GetOrderRevisionBatch :many reads
-- params: ids, owners
-- not null: n
-- GetOrderRevision for the requests of one turn at once, as GetOrderJsonBatch.
SELECT k.n::int AS n, o.revision
FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS k(id, owner, n)
JOIN orders o ON o.id = k.id AND (k.owner IS NULL OR o.customer_id = k.owner);

-- name: ListOrders :many reads
-- not null: total, total_count, sort_key
-- One page with its total count, in one statement and one snapshot, for a
-- list with a minTotal filter (ListOrdersKeptTotal serves the others). {{where}}
-- is built only from the fixed filter fragments in src/orders/order-list.ts
-- (values are parameters: $1…$n), {{orderBy}} only from the fixed sort-key
-- map; {{after}} is a cursor page's keyset condition (TRUE on a page by
-- number), {{sortKey}} each row's keyset position as text, both from the
-- same map (src/db/page.ts); {{limit}} and {{offset}} are the parameter
-- numbers after those (offset 0 on a cursor page).
-- The count is a separate scalar subquery rather than count(*) OVER (): the
-- page stops after LIMIT rows in index order, and the count can read the
-- index alone (an index-only scan), instead of every matching row in full.
WITH page AS (
  SELECT o.id, o.customer_id, o.status, o.currency, o.total, o.created_at, o.updated_at
  FROM orders o
  WHERE {{where}} AND {{after}}
  ORDER BY {{orderBy}}
  LIMIT {{limit}} OFFSET {{offset}}
)
SELECT o.id, o.customer_id, o.status, o.currency, o.total::text AS total, o.created_at, o.updated_at,
       (SELECT count(*) FROM orders o WHERE {{where}}) AS total_count,
       it.items,
       {{sortKey}} AS sort_key
FROM page o, order_items_json(o.id) it(items)
ORDER BY {{orderBy}};

-- name: CountOrders :one reads
-- not null: total_count
-- The total when the page lies past the last one. {{where}} as in ListOrders.
SELECT count(*) AS total_count
FROM orders o
WHERE {{where}};

-- name: ListOrdersKeptTotal :many reads
-- not null: total, total_count, sort_key
-- ListOrders for a list filtered by nothing but customer and status: the
-- same page, with the total summed from derived.order_counts (migration
-- 0007: kept by triggers in the transaction of every change, so in the
-- statement's one snapshot it agrees with the rows) instead of counted from
-- the orders: a few counter rows in place of one index entry per order.
-- {{totalWhere}} holds the same filters over order_counts c, with the same
-- parameter numbers as {{where}} (src/orders/order-list.ts): c.customer_id = $n
-- for each customer condition, or c.customer_id = 0 (the rows that count
-- every customer) when there is none, and c.status = $n. {{after}},
-- {{sortKey}}, {{limit}} and {{offset}} as in ListOrders.
WITH page AS (
  SELECT o.id, o.customer_id, o.status, o.currency, o.total, o.created_at, o.updated_at
  FROM orders o
  WHERE {{where}} AND {{after}}
  ORDER BY {{orderBy}}
  LIMIT {{limit}} OFFSET {{offset}}
)
SELECT o.id, o.customer_id, o.status, o.currency, o.total::text AS total, o.created_at, o.updated_at,
       (SELECT coalesce(sum(c.n), 0)::bigint FROM derived.order_counts c WHERE {{totalWhere}}) AS total_count,
       it.items,
       {{sortKey}} AS sort_key
FROM page o, order_items_json(o.id) it(items)
ORDER BY {{orderBy}};

-- name: SumOrderCounts :one reads
-- not null: total_count
-- The total of ListOrdersKeptTotal when the page lies past the last one.
-- {{totalWhere}} as there.
SELECT coalesce(sum(c.n), 0)::bigint AS total_count
FROM derived.order_counts c
WHERE {{totalWhere}};

-- name: FindProducts :many reads
-- params: ids
-- not null: price
-- The catalog entries an order's items name; $1: product ids.
SELECT id, price::text AS price, currency
FROM products
WHERE id = ANY ($1::bigint[]);

-- name: CreateOrder :one writes
-- params: customerId, checkCustomer, productIds, quantities
-- not null: customer_known
-- A new pending order and its items, written only if the rules of contract §4
-- that need the database hold: the customer exists (checked when $2: an
-- admin names one; a customer's own id needs no check), every product is
-- known, all in one currency, and the total fits numeric(12,2). Otherwise
-- nothing is written and the row says why, for src/orders/store.ts to name
-- each item at fault: a refusal is a row, never an error, so the request's
-- transaction goes on (to store it, contract §7). Unit prices are captured from
-- the catalog in the same statement. $1: customer id, $2: check the
-- customer, $3: product ids, $4: quantities (same order as $3; the items get
-- ids in that order). Returns id (NULL when refused), customer_known, and
-- currencies: each item's product's currency, null for an unknown product,
-- in the items' order (a JSON array: the driver reads a NULL in a text[] as
-- the string "NULL").
WITH lines AS (
  SELECT w.n, w.product_id, w.qty, p.id AS known_id, p.price, p.currency::text AS currency
  FROM unnest($3::bigint[], $4::integer[]) WITH ORDINALITY AS w (product_id, qty, n)
  LEFT JOIN products p ON p.id = w.product_id
),
checked AS (
  SELECT (NOT $2::boolean OR EXISTS (SELECT 1 FROM users u WHERE u.id = $1)) AS customer_known,
         json_agg(l.currency ORDER BY l.n) AS currencies,
         count(*) = count(l.known_id) AND count(DISTINCT l.currency) = 1 AS one_known_currency,
         coalesce(sum(l.qty * l.price), 0) AS total
  FROM lines l
),
new_order AS (
  INSERT INTO orders (customer_id, currency, total)
  SELECT $1, c.currencies ->> 0, c.total
  FROM checked c
  WHERE c.customer_known AND c.one_known_currency AND c.total <= 9999999999.99
  RETURNING id
),
new_items AS (
  INSERT INTO order_items (order_id, product_id, qty, unit_price)
  SELECT new_order.id, l.product_id, l.qty, l.price
  FROM new_order, lines l
  ORDER BY l.n
)
SELECT (SELECT id FROM new_order) AS id, c.customer_known, c.currencies
FROM checked c;

-- name: CreateOrderKeyed :one writes
-- params: userId, key, fingerprint, customerId, checkCustomer, productIds, quantities,
-- params: version, contentType, location, etag
-- not null: locked
-- A keyed POST /orders in one statement (sql/migrations/0014_idempotent_create_order.sql):
-- the key claimed, the order made (or refused, nothing written), its event
-- recorded and its answer stored, in this statement's own transaction. $1:
-- user id, $2: key, $3: the request's fingerprint, $4: customer id, $5: check
-- the customer, $6: product ids, $7: quantities, $8: the answer's version,
-- $9: its Content-Type, $10: its Location but the id, $11: its ETag after
-- the id and revision (src/orders/etag.ts).
SELECT locked, fingerprint, status, headers, body, order_id, order_revision, order_body
FROM idempotent_create_order($1::bigint, $2::text, $3::text, $4::bigint, $5::boolean, $6::bigint[], $7::integer[],
                             $8::integer, $9::text, $10::text, $11::text);

-- name: RecordOrderCreated :one writes
-- params: id
-- not null: total
-- The order CreateOrder has just written, read as GetOrder reads it (after
-- the triggers of its items have moved its revision), and its order.created
-- event (contract §15) written from that same row in the same statement, with a
-- pending delivery to every endpoint subscribed to the type, as InsertEvent
-- (events.sql) writes them. The event's data is the order's v2
-- representation (order_json_v2, migration 0017). $1: order id.
WITH o AS (
  SELECT o.id, o.customer_id, o.status, o.currency, o.total::text AS total, o.created_at, o.updated_at, o.revision,
         it.items
  FROM orders o, order_items_json(o.id) it(items)
  WHERE o.id = $1
),
event AS (
  INSERT INTO events (type, customer_id, data)
  SELECT 'order.created', o.customer_id, j.body::jsonb
  FROM orders o, order_json_v2(o, o.id, o.currency) j(body)
  WHERE o.id = $1
  RETURNING id, type
),
deliveries AS (
  INSERT INTO webhook_deliveries (endpoint_id, event_id)
  -- FOR KEY SHARE: an endpoint deleted meanwhile drops out instead of failing the change.
  SELECT w.id, e.id
  FROM event e JOIN (SELECT id, events FROM webhook_endpoints FOR KEY SHARE) w ON e.type = ANY (w.events)
)
SELECT o.id, o.customer_id, o.status, o.currency, o.total, o.created_at, o.updated_at, o.revision, o.items
FROM o;

-- name: ReplaceOrderItems :one writes
-- params: id, productIds, quantities
-- not null: touched
-- Makes the order's items exactly $2 (product ids) with $3 (quantities):
-- a product still wanted keeps its line, id and captured unit price (only
-- its qty may change); a product no longer wanted loses its line; a new
-- product gets a line priced from the catalog now. $1: order id.
WITH wanted AS (
  SELECT w.product_id, w.qty, w.n
  FROM unnest($2::bigint[], $3::integer[]) WITH ORDINALITY AS w (product_id, qty, n)
),
removed AS (
  DELETE FROM order_items i
  WHERE i.order_id = $1
    AND NOT EXISTS (SELECT 1 FROM wanted w WHERE w.product_id = i.product_id)
  RETURNING i.id
),
changed AS (
  UPDATE order_items i
  SET qty = w.qty
  FROM wanted w
  WHERE i.order_id = $1 AND i.product_id = w.product_id AND i.qty <> w.qty
  RETURNING i.id
),
added AS (
  INSERT INTO order_items (order_id, product_id, qty, unit_price)
  SELECT $1, p.id, w.qty, p.price
  FROM wanted w
  JOIN products p ON p.id = w.product_id
  WHERE NOT EXISTS (SELECT 1 FROM order_items i WHERE i.order_id = $1 AND i.product_id = w.product_id)
  ORDER BY w.n
  RETURNING id
)
SELECT (SELECT count(*) FROM removed) + (SELECT count(*) FROM changed) + (SELECT count(*) FROM added) AS touched;

-- name: UpdateOrder :exec writes
-- params: id, customerId, status, currency, itemsChanged
-- Sets the order's owner, status and currency, and recomputes its total
-- from its items. The trigger moves updated_at when anything changed; $5
-- forces that (true when the items changed, which the row does not show).
-- $1: order id, $2: customer id, $3: status, $4: currency.
UPDATE orders o
SET customer_id = $2,
    status = $3,
    currency = $4,
    total = (SELECT coalesce(sum(i.qty * i.unit_price), 0) FROM order_items i WHERE i.order_id = o.id),
    updated_at = CASE WHEN $5::boolean THEN now() ELSE o.updated_at END
WHERE o.id = $1;

-- name: DeleteOrder :exec writes
-- params: id
-- Its items go with it (ON DELETE CASCADE).
DELETE FROM orders WHERE id = $1;
