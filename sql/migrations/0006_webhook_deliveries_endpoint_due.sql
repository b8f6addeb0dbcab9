-- 0006: one attempt in flight per webhook endpoint (SPEC §15; docs/events.md, "Delivery").

-- ClaimDeliveries (sql/queries/events.sql): each endpoint's earliest due
-- pending delivery, found in one index probe per endpoint, so that a claim
-- costs the same however many deliveries a hung endpoint has queued.
CREATE INDEX webhook_deliveries_endpoint_due_idx ON webhook_deliveries (endpoint_id, next_attempt_at, id) WHERE status = 'pending';

-- Served the earlier ClaimDeliveries (due deliveries of all endpoints in one
-- scan), which no statement runs any more.
DROP INDEX webhook_deliveries_due_idx;
