-- Figures GET /metrics reads from the database at each scrape (contract §16;
-- src/metrics/route.ts), under a 1 s deadline.

-- name: MetricsFigures :one
-- Webhook deliveries still to be attempted (pending) and given up (failed),
-- and the seconds since the oldest event the log still holds (0 when it holds
-- none). pending counts the partial index webhook_deliveries_endpoint_due_idx;
-- failed scans webhook_deliveries (no index has its status: the table holds 30
-- days of deliveries); the oldest event is one probe of events_created_at_idx.
SELECT
  (SELECT count(*) FROM webhook_deliveries WHERE status = 'pending') AS deliveries_pending,
  (SELECT count(*) FROM webhook_deliveries WHERE status = 'failed') AS deliveries_failed,
  COALESCE(EXTRACT(EPOCH FROM now() - (SELECT min(created_at) FROM events)), 0)::float8 AS oldest_event_age_seconds;
