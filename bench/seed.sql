-- The benchmark data (contract §14), loaded by bench/run.ts: 1,000 customers and
-- orders with 1–5 items each, made with generate_series. Idempotent: the
-- runner asks CountBenchOrders and adds only what is missing.

-- name: SeedBenchUsers :exec writes
INSERT INTO users (email, name, role)
SELECT 'bench-customer-' || g || '@example.com', 'Bench customer ' || g, 'customer'
FROM generate_series(1, 1000) AS g
UNION ALL
SELECT 'bench-admin@example.com', 'Bench admin', 'admin'
ON CONFLICT ((lower(email))) DO NOTHING;

-- name: CountBenchOrders :one reads
SELECT count(*)::bigint AS n
FROM orders o
JOIN users u ON u.id = o.customer_id
WHERE u.email LIKE 'bench-customer-%';

-- name: SeedBenchOrders :exec writes
-- $1 more orders for the bench customers, round-robin; statuses cycle through
-- all five; created_at spreads back over the past (30 s apart); each order
-- gets 1–5 distinct products of the demo catalog, priced from it.
WITH customers AS (
  SELECT array_agg(id ORDER BY id) AS ids FROM users WHERE email LIKE 'bench-customer-%'
),
new_orders AS (
  INSERT INTO orders (customer_id, status, currency, total, created_at, updated_at)
  SELECT c.ids[1 + (g % array_length(c.ids, 1))],
         (ARRAY['pending', 'paid', 'shipped', 'delivered', 'cancelled'])[1 + ((g * 7) % 5)],
         'EUR', 0,
         now() - make_interval(secs => g * 30),
         now() - make_interval(secs => g * 30)
  FROM customers c, generate_series(1, $1::integer) AS g
  RETURNING id
)
INSERT INTO order_items (order_id, product_id, qty, unit_price)
SELECT o.id, p.id, 1 + ((o.id + k) % 5)::integer, p.price
FROM new_orders o
CROSS JOIN LATERAL generate_series(1, 1 + (o.id % 5)::integer) AS k
JOIN products p ON p.sku = (ARRAY[
  'MUG-001', 'MUG-002', 'TEE-001', 'TEE-002', 'HAT-001', 'BAG-001', 'BAG-002', 'NB-001', 'NB-002', 'PEN-001',
  'PEN-002', 'CUP-001', 'TEA-001', 'COF-001', 'COF-002', 'SOC-001', 'CAP-001', 'PST-001', 'STK-001', 'LMP-001'
])[1 + ((o.id * 7 + k * 3) % 20)::integer];

-- name: DeleteBenchPosts :one writes
-- What earlier runs wrote, so that every run starts from the seeded data: the
-- orders created through the API (scenario 4 and the body check: each has its
-- order.created event, the seeded orders none) with their items and events,
-- and the bench users' stored idempotency keys. Without it each run would add
-- its POSTs' pending orders to scenario 2's list, which costs the peers (an
-- exact count(*)) more with every run and the service (kept counts) nothing.
-- The peers' own tables go too; they create them afresh at start. Returns
-- how many orders went.
WITH posted AS (
  DELETE FROM orders o
  USING events e
  WHERE e.type = 'order.created' AND o.id = (e.data ->> 'id')::bigint
    AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.order_id = o.id)
  RETURNING o.id
),
posted_events AS (
  DELETE FROM events e
  USING posted p
  WHERE e.type = 'order.created' AND (e.data ->> 'id')::bigint = p.id
),
keys AS (
  DELETE FROM idempotency_keys k
  USING users u
  WHERE k.user_id = u.id AND u.email LIKE 'bench-%'
)
SELECT count(*)::bigint AS n FROM posted;

-- name: DropPeerTables :exec writes
DROP TABLE IF EXISTS peer_idempotency_keys, peer_events, peer_order_items, peer_orders;

-- name: PauseUpdatedAtTrigger :exec writes
-- Setting the seeded totals is not a change a client made: keep updated_at.
ALTER TABLE orders DISABLE TRIGGER orders_set_updated_at;

-- name: ResumeUpdatedAtTrigger :exec writes
ALTER TABLE orders ENABLE TRIGGER orders_set_updated_at;

-- name: SetBenchTotals :exec writes
-- The totals of the orders just made (total 0 until now).
UPDATE orders o
SET total = s.total
FROM (SELECT order_id, sum(qty * unit_price) AS total FROM order_items GROUP BY order_id) s
WHERE o.id = s.order_id AND o.total = 0;

-- name: VacuumBench :exec writes
-- Fresh statistics, and a visibility map so that counts use index-only scans
-- (as autovacuum would leave a long-running database). Outside a transaction.
VACUUM (ANALYZE) users, orders, order_items, products;

-- name: SampleOrderIds :many reads
-- Random existing order ids for GET /orders/{id}.
SELECT id FROM orders ORDER BY random() LIMIT 2000;

-- name: BusiestCustomer :one reads
-- A customer with many orders of total ≥ 100, for the page=3 scenario.
SELECT customer_id AS id
FROM orders
WHERE total >= 100
GROUP BY customer_id
ORDER BY count(*) DESC, customer_id
LIMIT 1;
