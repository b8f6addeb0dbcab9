-- Payments (contract §4). A payment and the order's move to paid commit in one transaction.

-- name: LockOrderForPayment :opt writes
-- params: id, owner?
-- not null: total
-- The order to pay, locked until the transaction ends. $1: order id; $2: the
-- owning customer a customer is limited to, or NULL (an admin).
SELECT id, status, currency, total::text AS total
FROM orders
WHERE id = $1
  AND ($2::bigint IS NULL OR customer_id = $2)
FOR UPDATE;

-- name: AmountEqualsTotal :one reads
-- params: amount, total
-- not null: equal
-- Exact decimal comparison, never floating point. $1: amount as text, $2: total as text.
SELECT $1::numeric = $2::numeric AS equal;

-- name: InsertPayment :one writes
-- params: orderId, amount, currency
-- not null: amount
INSERT INTO payments (order_id, amount, currency)
VALUES ($1, $2::numeric, $3)
RETURNING id, order_id, amount::text AS amount, currency, status, created_at;

-- name: MarkOrderPaid :exec writes
-- params: orderId
UPDATE orders SET status = 'paid' WHERE id = $1 AND status = 'pending';

-- name: GetPayment :opt reads
-- params: id, owner?
-- not null: amount
-- $2: the owning customer a customer is limited to, or NULL.
SELECT p.id, p.order_id, p.amount::text AS amount, p.currency, p.status, p.created_at
FROM payments p
JOIN orders o ON o.id = p.order_id
WHERE p.id = $1
  AND ($2::bigint IS NULL OR o.customer_id = $2);

-- name: ListPayments :many reads
-- not null: amount, total_count, sort_key
-- {{where}}: fixed fragments from src/payments/handlers.ts; {{orderBy}},
-- {{after}} (a cursor page's keyset) and {{sortKey}}: from the fixed sort-key
-- map; {{limit}}, {{offset}}: the parameter numbers after those (src/db/page.ts).
SELECT p.id, p.order_id, p.amount::text AS amount, p.currency, p.status, p.created_at,
       (SELECT count(*) FROM payments p JOIN orders o ON o.id = p.order_id WHERE {{where}}) AS total_count,
       {{sortKey}} AS sort_key
FROM payments p
JOIN orders o ON o.id = p.order_id
WHERE {{where}} AND {{after}}
ORDER BY {{orderBy}}
LIMIT {{limit}} OFFSET {{offset}};

-- name: CountPayments :one reads
-- not null: total_count
SELECT count(*) AS total_count
FROM payments p
JOIN orders o ON o.id = p.order_id
WHERE {{where}};

-- name: OrderHasPayments :one reads
-- params: orderId
-- not null: has
SELECT EXISTS (SELECT 1 FROM payments WHERE order_id = $1) AS has;
