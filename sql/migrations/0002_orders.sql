-- 0002: orders and their items (SPEC §2, §3, §4).

CREATE TABLE orders (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  customer_id bigint NOT NULL REFERENCES users (id),
  status      text NOT NULL DEFAULT 'pending'
              CHECK (status IN ('pending', 'paid', 'shipped', 'delivered', 'cancelled')),
  currency    char(3) NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  total       numeric(12, 2) NOT NULL CHECK (total >= 0),
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE orders IS 'Orders (SPEC §2). Status transitions follow SPEC §3; the service checks them, the CHECK keeps the values.';
COMMENT ON COLUMN orders.currency IS 'ISO 4217; every item of the order is priced in it.';
COMMENT ON COLUMN orders.total IS 'Σ qty × unit_price of the order''s items, kept by the statements that write items (sql/queries/orders.sql).';
COMMENT ON COLUMN orders.updated_at IS 'Set by the orders_set_updated_at trigger on every change to the row; item changes touch the row too.';

CREATE TABLE order_items (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  order_id   bigint NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
  product_id bigint NOT NULL REFERENCES products (id),
  qty        integer NOT NULL CHECK (qty BETWEEN 1 AND 1000),
  unit_price numeric(12, 2) NOT NULL CHECK (unit_price >= 0),
  -- A product appears once per order (SPEC §4); also serves the items of one order.
  CONSTRAINT order_items_order_product_key UNIQUE (order_id, product_id)
);
COMMENT ON TABLE order_items IS 'The lines of an order. unit_price is the product''s price captured when the line was written; later catalog changes never touch it.';

CREATE FUNCTION orders_set_updated_at() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW.updated_at := now();
  RETURN NEW;
END;
$$;

CREATE TRIGGER orders_set_updated_at
  BEFORE UPDATE ON orders
  FOR EACH ROW
  WHEN (OLD.* IS DISTINCT FROM NEW.*)
  EXECUTE FUNCTION orders_set_updated_at();

-- Indexes, by the query each serves (sql/queries/orders.sql). Every one ends
-- in id, the final tie-breaker of every sort, so a page is read in index order.

-- GET /orders?customerId=N, /users/{id}/orders, and a customer's own list
-- (default sort id; also sort=createdAt, since ids grow with creation time).
CREATE INDEX orders_customer_id_idx ON orders (customer_id, id);
-- /users/{id}/orders and customerId with minTotal or sort=total / -total,id.
CREATE INDEX orders_customer_total_idx ON orders (customer_id, total, id);
-- status=… with sort=createdAt / -createdAt (and the default id order).
CREATE INDEX orders_status_created_at_idx ON orders (status, created_at, id);
-- sort=createdAt / -createdAt with no selective filter.
CREATE INDEX orders_created_at_idx ON orders (created_at, id);
-- sort=updatedAt / -updatedAt.
CREATE INDEX orders_updated_at_idx ON orders (updated_at, id);
-- minTotal=… and sort=total / -total.
CREATE INDEX orders_total_idx ON orders (total, id);
-- GET /order-items?orderId=N in id order, and the items embedded in each order.
CREATE INDEX order_items_order_id_idx ON order_items (order_id, id);
-- The foreign key to products (a product referenced by items cannot be deleted).
CREATE INDEX order_items_product_id_idx ON order_items (product_id);
