-- The event log and webhooks (contract §15; src/events/*.ts).

-- name: InsertEvent :one writes
-- params: type, customerId?, data
-- not null: deliveries
-- An event, in the transaction of its change, and a pending delivery to every
-- endpoint subscribed to its type. $1: type, $2: customer id or NULL, $3: data (JSON text).
WITH event AS (
  INSERT INTO events (type, customer_id, data)
  VALUES ($1, $2, $3::text::jsonb)
  RETURNING id, type
),
deliveries AS (
  INSERT INTO webhook_deliveries (endpoint_id, event_id)
  -- FOR KEY SHARE: an endpoint deleted meanwhile drops out instead of failing the change.
  SELECT w.id, e.id
  FROM event e JOIN (SELECT id, events FROM webhook_endpoints FOR KEY SHARE) w ON e.type = ANY (w.events)
  RETURNING id
)
SELECT id, (SELECT count(*) FROM deliveries) AS deliveries FROM event;

-- name: FindEventPosition :opt reads
-- params: id, owner?
-- not null: xid
-- The (xid, id) position of the event a cursor names, if it is readable yet
-- (an id seen in a webhook may be ahead of the readable log). $2: the
-- customer a customer is limited to, or NULL.
SELECT xid::text AS xid, id FROM events
WHERE id = $1 AND ($2::bigint IS NULL OR customer_id = $2)
  AND xid < pg_snapshot_xmin(pg_current_snapshot());

-- name: ListEvents :many reads
-- params: afterXid, afterId, type?, pageSize
-- Events after a position, in (xid, id) order, and only of transactions older
-- than the oldest one still running: an event committed late can never fall
-- behind a cursor. $1, $2: the position (xid as text, id), $3: type or NULL,
-- $4: page size. For admins (every event).
SELECT e.id, e.type, e.data, e.created_at
FROM events e
WHERE (e.xid, e.id) > ($1::text::xid8, $2::bigint)
  AND e.xid < pg_snapshot_xmin(pg_current_snapshot())
  AND ($3::text IS NULL OR e.type = $3)
ORDER BY e.xid, e.id
LIMIT $4;

-- name: ListCustomerEvents :many reads
-- params: afterXid, afterId, type?, pageSize, customerId
-- As ListEvents, for one customer (its own statement, so that its plan uses
-- events_customer_xid_id_idx). $5: the customer.
SELECT e.id, e.type, e.data, e.created_at
FROM events e
WHERE e.customer_id = $5
  AND (e.xid, e.id) > ($1::text::xid8, $2::bigint)
  AND e.xid < pg_snapshot_xmin(pg_current_snapshot())
  AND ($3::text IS NULL OR e.type = $3)
ORDER BY e.xid, e.id
LIMIT $4;

-- name: PurgeEvents :exec writes
-- Events are kept 30 days; their deliveries go with them.
DELETE FROM events WHERE created_at <= now() - interval '30 days';

-- name: InsertWebhookEndpoint :one writes
-- params: url, events, secret
INSERT INTO webhook_endpoints (url, events, secret)
VALUES ($1, $2::text[], $3)
RETURNING id, url, events, secret, created_at;

-- name: GetWebhookEndpoint :opt reads
-- params: id
SELECT id, url, events, created_at FROM webhook_endpoints WHERE id = $1;

-- name: ListWebhookEndpoints :many reads
-- not null: total_count, sort_key
-- {{where}}, {{after}}, {{orderBy}}, {{sortKey}}, {{limit}}, {{offset}}: as every list (src/db/page.ts).
SELECT id, url, events, created_at, (SELECT count(*) FROM webhook_endpoints WHERE {{where}}) AS total_count,
       {{sortKey}} AS sort_key
FROM webhook_endpoints
WHERE {{where}} AND {{after}}
ORDER BY {{orderBy}}
LIMIT {{limit}} OFFSET {{offset}};

-- name: CountWebhookEndpoints :one reads
-- not null: total_count
SELECT count(*) AS total_count FROM webhook_endpoints WHERE {{where}};

-- name: DeleteWebhookEndpoint :opt writes
-- params: id
DELETE FROM webhook_endpoints WHERE id = $1 RETURNING id;

-- name: ListDeliveries :many reads
-- not null: total_count, sort_key
-- The deliveries of one endpoint with their attempts. {{where}} always holds
-- the endpoint; the other fragments as every list's (src/db/page.ts).
SELECT d.id, d.event_id, e.type AS event_type, d.status, d.attempts, d.next_attempt_at, d.created_at,
       coalesce((SELECT json_agg(json_build_object('at', a.attempted_at, 'status', a.status, 'error', a.error,
                                           'durationMs', a.duration_ms) ORDER BY a.id)
                 FROM webhook_attempts a WHERE a.delivery_id = d.id), '[]'::json) AS attempt_log,
       (SELECT count(*) FROM webhook_deliveries d WHERE {{where}}) AS total_count,
       {{sortKey}} AS sort_key
FROM webhook_deliveries d
JOIN events e ON e.id = d.event_id
WHERE {{where}} AND {{after}}
ORDER BY {{orderBy}}
LIMIT {{limit}} OFFSET {{offset}};

-- name: CountDeliveries :one reads
-- not null: total_count
SELECT count(*) AS total_count FROM webhook_deliveries d WHERE {{where}};

-- name: ClaimDeliveries :many writes
-- params: limit, leaseSeconds
-- Due deliveries, at most one per endpoint, and only of endpoints whose lease
-- is free: at most one attempt in flight per endpoint across all processes
-- (contract §17). A hung endpoint holds one slot of one process, never more,
-- and its other deliveries wait their turn. Each free endpoint's head (its
-- earliest due delivery, one probe of webhook_deliveries_endpoint_due_idx
-- however long its backlog), oldest heads first. Claimed by moving the head's
-- due time to the end of a lease and taking the endpoint's lease until the
-- same time, held by this claim (the delivery and its new attempt number),
-- both in this one statement. The row locks last only this statement; the
-- leases last the attempt, and a process that dies mid-attempt frees both
-- when they expire. $1: how many, $2: lease seconds.
WITH heads AS (
  SELECT w.id AS endpoint_id, head.id
  FROM webhook_endpoints w
  CROSS JOIN LATERAL (
    SELECT id FROM webhook_deliveries
    WHERE endpoint_id = w.id AND status = 'pending' AND next_attempt_at <= now()
    ORDER BY next_attempt_at, id
    LIMIT 1
  ) head
  WHERE w.lease_until IS NULL OR w.lease_until <= now()
),
due AS (
  SELECT d.id, d.endpoint_id, d.attempts + 1 AS attempt
  FROM heads
  JOIN webhook_deliveries d ON d.id = heads.id
  JOIN webhook_endpoints w ON w.id = heads.endpoint_id
  -- Checked again on the locked rows: a head or an endpoint that another
  -- process claimed since this statement's snapshot drops out.
  WHERE d.status = 'pending' AND d.next_attempt_at <= now()
    AND (w.lease_until IS NULL OR w.lease_until <= now())
  ORDER BY d.next_attempt_at, d.id
  LIMIT $1
  -- Both rows, SKIP LOCKED: of two processes racing, one claims the delivery
  -- and the endpoint, the other passes over them, never waiting. NO KEY
  -- UPDATE, the lock the UPDATEs below take anyway: FOR UPDATE would conflict
  -- with the KEY SHARE lock every writing transaction holds on the endpoints
  -- (InsertEvent), and a claim would skip every endpoint while one is open.
  FOR NO KEY UPDATE OF d, w SKIP LOCKED
),
leased AS (
  UPDATE webhook_endpoints w
  SET lease_until = now() + make_interval(secs => $2::double precision),
      lease_delivery_id = due.id, lease_attempt = due.attempt
  FROM due
  WHERE w.id = due.endpoint_id
  RETURNING w.id, w.url, w.secret
)
UPDATE webhook_deliveries d
SET attempts = due.attempt, next_attempt_at = now() + make_interval(secs => $2::double precision)
FROM due, leased, events e
WHERE d.id = due.id AND leased.id = d.endpoint_id AND e.id = d.event_id
RETURNING d.id, d.endpoint_id, d.attempts, leased.url, leased.secret, e.id AS event_id, e.type, e.data, e.created_at;

-- name: RecordAttempt :opt writes
-- params: deliveryId, status?, error?, durationMs, state, retrySeconds?, attempt
-- An attempt and the delivery's new state, together, only if the delivery is
-- still this attempt's ($7: the attempt number it was claimed with): a late
-- result never overwrites a newer attempt's. With them, the endpoint's lease
-- is released, only if this attempt still holds it (its holder is this
-- delivery and attempt number): an attempt that outlived its lease releases
-- nothing that a newer claim has taken since. $1: delivery, $2: HTTP status
-- or NULL, $3: error or NULL, $4: duration ms, $5: 'delivered', 'failed' or
-- 'pending', $6: seconds until the next attempt (pending).
WITH released AS (
  UPDATE webhook_endpoints
  SET lease_until = NULL, lease_delivery_id = NULL, lease_attempt = NULL
  WHERE id = (SELECT endpoint_id FROM webhook_deliveries WHERE id = $1)
    AND lease_delivery_id = $1 AND lease_attempt = $7
  RETURNING id
),
updated AS (
  UPDATE webhook_deliveries
  SET status = $5, next_attempt_at = now() + make_interval(secs => $6::double precision)
  -- The count, always true, makes this wait for released: the endpoint's row
  -- is locked before the delivery's, in the order a DELETE of the endpoint
  -- takes them (its cascade), so that the two never deadlock.
  WHERE id = $1 AND attempts = $7 AND status = 'pending' AND (SELECT count(*) FROM released) >= 0
  RETURNING id
)
INSERT INTO webhook_attempts (delivery_id, status, error, duration_ms)
SELECT id, $2, $3, $4 FROM updated
RETURNING delivery_id;
