-- 0011: the number of webhook deliveries in each status, kept in the
-- transaction of every change, so that GET /metrics reads a few counter rows
-- instead of counting the deliveries of 30 days (contract §13: never a scan
-- that grows with a table). Kept as derived.order_counts is (0007): striped
-- by the writing connection, so that concurrent writers (every committed
-- order change fans out to deliveries) do not queue on one counter row.

-- No delivery is written from here to the end of this migration's transaction:
-- the fill below and the triggers see exactly the same rows.
LOCK TABLE webhook_deliveries IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE derived.webhook_delivery_counts (
  status text NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  stripe smallint NOT NULL CHECK (stripe BETWEEN 0 AND 63),
  n      bigint NOT NULL,
  PRIMARY KEY (status, stripe)
) WITH (fillfactor = 50);
COMMENT ON TABLE derived.webhook_delivery_counts IS 'How many webhook deliveries are in each status, kept by the webhook_delivery_counts_keep triggers on webhook_deliveries in the transaction of every change; never written by the service. The count of a status is sum(n) over its stripes.';
COMMENT ON COLUMN derived.webhook_delivery_counts.stripe IS 'The writing connection''s backend pid modulo 64: concurrent transactions add to different rows. A stripe''s n may be negative (a delivery counted on one stripe and removed on another); only the sum over the stripes means anything.';
COMMENT ON COLUMN derived.webhook_delivery_counts.n IS 'Deliveries added to this status minus deliveries removed from it, through this stripe.';

INSERT INTO derived.webhook_delivery_counts (status, stripe, n)
SELECT status, 0, count(*) FROM webhook_deliveries GROUP BY status;

-- Adds the change of one statement (INSERT, DELETE, also a cascade from an
-- event's or an endpoint's deletion) or one row (UPDATE of its status) to the
-- counts of its statuses, on this connection's stripe: +1 for each row in
-- new_rows, -1 for each in old_rows; statuses whose change nets to zero are
-- not written. Counter rows are upserted in key order: two changes never
-- lock them in opposite orders.
CREATE FUNCTION derived.webhook_delivery_counts_keep() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  statuses text[];
  deltas bigint[];
BEGIN
  IF TG_OP = 'INSERT' THEN
    SELECT array_agg(status), array_agg(1::bigint) INTO statuses, deltas FROM new_rows;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT array_agg(status), array_agg(-1::bigint) INTO statuses, deltas FROM old_rows;
  ELSE
    statuses := ARRAY[OLD.status, NEW.status];
    deltas := ARRAY[-1, 1];
  END IF;
  INSERT INTO derived.webhook_delivery_counts AS c (status, stripe, n)
  SELECT g.status, pg_backend_pid() % 64, g.delta
  FROM (
    SELECT d.status, sum(d.delta)::bigint AS delta
    FROM unnest(statuses, deltas) AS d (status, delta)
    GROUP BY d.status
  ) AS g
  WHERE g.delta <> 0
  ORDER BY g.status
  ON CONFLICT (status, stripe) DO UPDATE SET n = c.n + excluded.n;
  RETURN NULL;
END;
$$;

CREATE TRIGGER webhook_delivery_counts_keep_insert
  AFTER INSERT ON webhook_deliveries
  REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT
  EXECUTE FUNCTION derived.webhook_delivery_counts_keep();

CREATE TRIGGER webhook_delivery_counts_keep_update
  AFTER UPDATE ON webhook_deliveries
  FOR EACH ROW
  WHEN (OLD.status IS DISTINCT FROM NEW.status)
  EXECUTE FUNCTION derived.webhook_delivery_counts_keep();

CREATE TRIGGER webhook_delivery_counts_keep_delete
  AFTER DELETE ON webhook_deliveries
  REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT
  EXECUTE FUNCTION derived.webhook_delivery_counts_keep();

CREATE FUNCTION derived.webhook_delivery_counts_clear() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM derived.webhook_delivery_counts;
  RETURN NULL;
END;
$$;

-- TRUNCATE fires no row or DELETE triggers.
CREATE TRIGGER webhook_delivery_counts_keep_truncate
  AFTER TRUNCATE ON webhook_deliveries
  FOR EACH STATEMENT
  EXECUTE FUNCTION derived.webhook_delivery_counts_clear();
