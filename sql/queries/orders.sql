-- Orders and their items (SPEC §2, §3, §4). An order is always read with its
-- items embedded as JSON, in id order: one query, never one per order.
-- unitPrice and total travel as text so no float ever touches money.

-- name: GetOrder :one
-- $1: order id; $2: the owning customer a customer is limited to, or NULL (an admin).
SELECT o.id, o.customer_id, o.status, o.currency, o.total::text AS total, o.created_at, o.updated_at,
       coalesce((SELECT json_agg(json_build_object(
                   'id', i.id, 'orderId', i.order_id, 'productId', i.product_id,
                   'qty', i.qty, 'unitPrice', i.unit_price::text) ORDER BY i.id)
                 FROM order_items i WHERE i.order_id = o.id), '[]'::json) AS items
FROM orders o
WHERE o.id = $1
  AND ($2::bigint IS NULL OR o.customer_id = $2);

-- name: LockOrder :one
-- The order's writable state, locked until the transaction ends, so that two
-- writers of one order are serialized and each sees the other's result.
-- $1: order id; $2: the owning customer, or NULL (an admin).
SELECT o.id, o.customer_id, o.status, o.currency
FROM orders o
WHERE o.id = $1
  AND ($2::bigint IS NULL OR o.customer_id = $2)
FOR UPDATE;

-- name: ListOrders :many
-- One page with its total count, in one statement and one snapshot. {{where}}
-- is built only from the fixed filter fragments in src/orders/orders.ts
-- (values are parameters: $1…$n), {{orderBy}} only from the fixed sort-key
-- map; {{limit}} and {{offset}} are the parameter numbers after the filters'.
-- The count is a separate scalar subquery rather than count(*) OVER (): the
-- page stops after LIMIT rows in index order, and the count can read the
-- index alone (an index-only scan), instead of every matching row in full.
WITH page AS (
  SELECT o.id, o.customer_id, o.status, o.currency, o.total, o.created_at, o.updated_at
  FROM orders o
  WHERE {{where}}
  ORDER BY {{orderBy}}
  LIMIT {{limit}} OFFSET {{offset}}
)
SELECT o.id, o.customer_id, o.status, o.currency, o.total::text AS total, o.created_at, o.updated_at,
       (SELECT count(*) FROM orders o WHERE {{where}}) AS total_count,
       coalesce((SELECT json_agg(json_build_object(
                   'id', i.id, 'orderId', i.order_id, 'productId', i.product_id,
                   'qty', i.qty, 'unitPrice', i.unit_price::text) ORDER BY i.id)
                 FROM order_items i WHERE i.order_id = o.id), '[]'::json) AS items
FROM page o
ORDER BY {{orderBy}};

-- name: CountOrders :one
-- The total when the page lies past the last one. {{where}} as in ListOrders.
SELECT count(*) AS total_count
FROM orders o
WHERE {{where}};

-- name: FindProducts :many
-- The catalog entries an order's items name; $1: product ids.
SELECT id, price::text AS price, currency
FROM products
WHERE id = ANY ($1::bigint[]);

-- name: InsertOrder :one
-- A new pending order and its items, unit prices captured from the catalog
-- in the same statement. $1: customer id, $2: currency, $3: product ids,
-- $4: quantities (same order as $3; the items get ids in that order).
WITH lines AS (
  SELECT w.n, p.id AS product_id, w.qty, p.price
  FROM unnest($3::bigint[], $4::integer[]) WITH ORDINALITY AS w (product_id, qty, n)
  JOIN products p ON p.id = w.product_id
),
new_order AS (
  INSERT INTO orders (customer_id, currency, total)
  SELECT $1, $2, coalesce(sum(l.qty * l.price), 0) FROM lines l
  RETURNING id
),
new_items AS (
  INSERT INTO order_items (order_id, product_id, qty, unit_price)
  SELECT new_order.id, l.product_id, l.qty, l.price
  FROM new_order, lines l
  ORDER BY l.n
  RETURNING id
)
SELECT id, (SELECT count(*) FROM new_items) AS item_count FROM new_order;

-- name: ReplaceOrderItems :one
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

-- name: UpdateOrder :exec
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

-- name: DeleteOrder :exec
-- Its items go with it (ON DELETE CASCADE).
DELETE FROM orders WHERE id = $1;
