-- 0012: the indexes that cursor pages still lacked (contract §4 "Deep pages").
-- A cursor page is the rows after a keyset position: (sort keys…, id) beyond
-- the last row's. An index on the list's equality filters followed by its
-- sort keys and id reads that as one range from the position, at any depth;
-- these are the sort keys of each collection that had none (docs/performance.md,
-- "Cursor pages"). The others were served already (0001–0005).

-- GET /orders?sort=status (and -status), and ?status=… in the default id order.
CREATE INDEX orders_status_id_idx ON orders (status, id);
-- A customer's own orders (and /users/{id}/orders, ?customerId=…) by status.
CREATE INDEX orders_customer_status_idx ON orders (customer_id, status, id);
-- A customer's own orders (and /users/{id}/orders, ?customerId=…) by updatedAt.
CREATE INDEX orders_customer_updated_at_idx ON orders (customer_id, updated_at, id);
-- GET /webhook-endpoints?sort=createdAt.
CREATE INDEX webhook_endpoints_created_at_idx ON webhook_endpoints (created_at, id);
-- GET /webhook-endpoints/{id}/deliveries?sort=createdAt.
CREATE INDEX webhook_deliveries_endpoint_created_at_idx ON webhook_deliveries (endpoint_id, created_at, id);
