-- Figures GET /metrics reads from the database, at most once per 10 s
-- (contract §13, §16; src/ops/metrics.ts), under a 1 s deadline.

-- name: MetricsFigures :one reads
-- not null: deliveries_pending, deliveries_failed, oldest_event_age_seconds
-- Webhook deliveries still to be attempted (pending) and given up (failed),
-- from the counts the triggers of 0011 keep (a few rows, whatever the number
-- of deliveries: contract §13), and the seconds since the oldest event the log
-- still holds (0 when it holds none), one probe of events_created_at_idx.
SELECT
  (SELECT coalesce(sum(n), 0) FROM derived.webhook_delivery_counts WHERE status = 'pending')::bigint
    AS deliveries_pending,
  (SELECT coalesce(sum(n), 0) FROM derived.webhook_delivery_counts WHERE status = 'failed')::bigint
    AS deliveries_failed,
  COALESCE(EXTRACT(EPOCH FROM now() - (SELECT min(created_at) FROM events)), 0)::float8 AS oldest_event_age_seconds;
