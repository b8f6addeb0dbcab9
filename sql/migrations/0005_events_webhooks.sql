-- 0005: the event log (a transactional outbox) and webhooks (SPEC §15).

CREATE TABLE events (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  type        text NOT NULL CHECK (type IN ('order.created', 'order.updated', 'order.status_changed',
                                            'order.deleted', 'payment.succeeded', 'user.created')),
  -- The customer whose resource it is (customers read only their own events); NULL for an admin user.
  customer_id bigint,
  data        jsonb NOT NULL,
  -- The writing transaction: readers return events in (xid, id) order and only
  -- below the oldest transaction still running, so none is ever skipped.
  xid         xid8 NOT NULL DEFAULT pg_current_xact_id(),
  created_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE events IS 'Every committed change to an order, payment or user, written in the transaction of the change (SPEC §15). Kept 30 days.';
COMMENT ON COLUMN events.data IS 'The resource''s version 2 representation (order.status_changed: {from, to, order}).';
-- GET /events (admin): the log in (xid, id) order.
CREATE INDEX events_xid_id_idx ON events (xid, id);
-- GET /events for a customer.
CREATE INDEX events_customer_xid_id_idx ON events (customer_id, xid, id);
-- The 30-day purge.
CREATE INDEX events_created_at_idx ON events (created_at);

CREATE TABLE webhook_endpoints (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  url        text NOT NULL CHECK (url ~ '^https?://' AND length(url) <= 2048),
  events     text[] NOT NULL CHECK (cardinality(events) >= 1),
  secret     text NOT NULL CHECK (secret ~ '^whsec_'),
  created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE webhook_endpoints IS 'Where events are POSTed (Standard Webhooks). The secret signs every delivery; it is shown once, when created.';

CREATE TABLE webhook_deliveries (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  endpoint_id     bigint NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id        bigint NOT NULL REFERENCES events (id) ON DELETE CASCADE,
  status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts        integer NOT NULL DEFAULT 0,
  -- When a pending delivery is due; while an attempt runs, the end of its lease.
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  created_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (endpoint_id, event_id)
);
COMMENT ON TABLE webhook_deliveries IS 'One event to one endpoint, delivered at least once; its id is the stable webhook-id of every attempt.';
-- The worker's claim: due pending deliveries.
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at, id) WHERE status = 'pending';
-- GET /webhook-endpoints/{id}/deliveries.
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, id);
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id);

CREATE TABLE webhook_attempts (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  delivery_id  bigint NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  attempted_at timestamptz NOT NULL DEFAULT now(),
  -- The receiver's HTTP status, or NULL when no response came (error says why).
  status       integer,
  error        text,
  duration_ms  integer NOT NULL
);
CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id, id);
