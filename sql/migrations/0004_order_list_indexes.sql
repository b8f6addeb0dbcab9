-- 0004: indexes for a status filter with the total or updatedAt sort, and a
-- customer with the createdAt sort
-- (found with EXPLAIN ANALYZE at 1,000,000 orders; docs/performance.md).

-- GET /orders?status=…&sort=total / -total (and sort=status,total under a status filter).
CREATE INDEX orders_status_total_idx ON orders (status, total, id);
-- GET /orders?status=…&sort=updatedAt / -updatedAt.
CREATE INDEX orders_status_updated_at_idx ON orders (status, updated_at, id);
-- GET /users/{id}/orders?sort=createdAt / -createdAt, and customerId=… with that sort.
CREATE INDEX orders_customer_created_at_idx ON orders (customer_id, created_at, id);
