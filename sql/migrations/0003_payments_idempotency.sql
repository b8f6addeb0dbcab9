-- 0003: payments (SPEC §4) and idempotency keys (SPEC §7).

CREATE TABLE payments (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- No cascade: an order with a payment cannot be deleted (SPEC §4: 409 order-has-payments).
  order_id   bigint NOT NULL REFERENCES orders (id),
  amount     numeric(12, 2) NOT NULL CHECK (amount >= 0),
  currency   char(3) NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  status     text NOT NULL DEFAULT 'succeeded' CHECK (status IN ('succeeded')),
  created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE payments IS 'Payments of orders (SPEC §2, §4). Inserted in the transaction that moves the order to paid.';
-- Money is never taken twice: at most one successful payment per order,
-- whatever the service does. Also serves GET /payments?orderId=N and the
-- order-has-payments check of DELETE /orders/{id}.
CREATE UNIQUE INDEX payments_order_id_key ON payments (order_id) WHERE status = 'succeeded';
CREATE INDEX payments_order_id_idx ON payments (order_id, id);
-- GET /payments?sort=createdAt.
CREATE INDEX payments_created_at_idx ON payments (created_at, id);

CREATE TABLE idempotency_keys (
  user_id     bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  key         text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
  fingerprint text NOT NULL,
  status      integer NOT NULL CHECK (status BETWEEN 200 AND 499),
  headers     jsonb NOT NULL,
  body        bytea NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  -- Keys are scoped to the user (SPEC §7): two users never share one.
  PRIMARY KEY (user_id, key)
);
COMMENT ON TABLE idempotency_keys IS 'The stored result of each request that carried an Idempotency-Key (SPEC §7), written in the transaction of its effect; kept 24 hours.';
COMMENT ON COLUMN idempotency_keys.fingerprint IS 'SHA-256 of the method, the path with its version, and the body re-serialized with sorted keys.';
COMMENT ON COLUMN idempotency_keys.headers IS 'The stored response fields: Content-Type, Location, ETag.';
-- The purge of keys older than 24 hours.
CREATE INDEX idempotency_keys_created_at_idx ON idempotency_keys (created_at);
