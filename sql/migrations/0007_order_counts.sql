-- 0007: the number of orders per customer and status, kept in the transaction
-- of every change, so that meta.total of a list filtered by nothing but
-- status and customer (SPEC §2, §4) reads a few counter rows instead of
-- counting one index entry per order (docs/performance.md, "List totals").

-- No order is written from here to the end of this migration's transaction:
-- the fill below and the triggers see exactly the same rows.
LOCK TABLE orders IN SHARE ROW EXCLUSIVE MODE;

-- What lives here is computed from the tables of public by triggers and can
-- be rebuilt from them; the service reads it and never writes it.
CREATE SCHEMA derived;
COMMENT ON SCHEMA derived IS 'Data kept by triggers from the tables in public (never written by the service; rebuildable from them).';

CREATE TABLE derived.order_counts (
  customer_id bigint NOT NULL CHECK (customer_id >= 0),
  status      text NOT NULL CHECK (status IN ('pending', 'paid', 'shipped', 'delivered', 'cancelled')),
  stripe      smallint NOT NULL CHECK (stripe BETWEEN 0 AND 63),
  n           bigint NOT NULL,
  -- Serves every read: one customer (and status), or customer 0 (and status).
  PRIMARY KEY (customer_id, status, stripe)
) WITH (fillfactor = 50);
COMMENT ON TABLE derived.order_counts IS 'How many orders each customer has in each status, kept by the order_counts_keep triggers on orders in the transaction of every change; never written by the service. The count of (customer, status) is sum(n) over its stripes.';
COMMENT ON COLUMN derived.order_counts.customer_id IS 'The customer; 0 (never a user id) for the rows that count every customer''s orders, which serve the lists without a customer filter.';
COMMENT ON COLUMN derived.order_counts.stripe IS 'The writing connection''s backend pid modulo 64: concurrent transactions add to different rows, so they do not queue on one counter row until the other commits. A stripe''s n may be negative (an order counted on one stripe and removed on another); only the sum over the stripes means anything.';
COMMENT ON COLUMN derived.order_counts.n IS 'Orders added minus orders removed through this stripe.';

INSERT INTO derived.order_counts (customer_id, status, stripe, n)
SELECT coalesce(customer_id, 0), status, 0, count(*)
FROM orders
GROUP BY GROUPING SETS ((customer_id, status), (status));

-- Adds the change of one statement (INSERT, DELETE) or one row (UPDATE) to
-- the counts of its (customer, status) groups and of their statuses
-- (customer 0), on this connection's stripe: +1 for each row in new_rows,
-- −1 for each in old_rows. INSERT and DELETE are counted per statement, from
-- its transition table: one upsert however many orders it wrote. An UPDATE
-- is counted per row, and only for a row whose customer or status changed
-- (the WHEN below is checked without calling this): most updates (a total,
-- a revision, updated_at) move nothing. Groups whose change nets to zero
-- are not written. Counter rows are upserted in key order, so two changes
-- that touch the same rows (on one stripe) lock them in the same order: an
-- order moved one way never deadlocks with another moved the other way.
CREATE FUNCTION derived.order_counts_keep() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  customer_ids bigint[];
  statuses text[];
  deltas bigint[];
BEGIN
  IF TG_OP = 'INSERT' THEN
    SELECT array_agg(customer_id), array_agg(status), array_agg(1::bigint) INTO customer_ids, statuses, deltas FROM new_rows;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT array_agg(customer_id), array_agg(status), array_agg(-1::bigint) INTO customer_ids, statuses, deltas FROM old_rows;
  ELSE
    customer_ids := ARRAY[OLD.customer_id, NEW.customer_id];
    statuses := ARRAY[OLD.status, NEW.status];
    deltas := ARRAY[-1, 1];
  END IF;
  INSERT INTO derived.order_counts AS c (customer_id, status, stripe, n)
  SELECT g.customer_id, g.status, pg_backend_pid() % 64, g.delta
  FROM (
    SELECT coalesce(d.customer_id, 0) AS customer_id, d.status, sum(d.delta)::bigint AS delta
    FROM unnest(customer_ids, statuses, deltas) AS d (customer_id, status, delta)
    GROUP BY GROUPING SETS ((d.customer_id, d.status), (d.status))
  ) AS g
  WHERE g.delta <> 0
  ORDER BY g.customer_id, g.status
  ON CONFLICT (customer_id, status, stripe) DO UPDATE SET n = c.n + excluded.n;
  RETURN NULL;
END;
$$;

-- No column list on the UPDATE trigger: a column set by a BEFORE trigger is
-- not in the statement's SET list, but WHEN sees it.
CREATE TRIGGER order_counts_keep_insert
  AFTER INSERT ON orders
  REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT
  EXECUTE FUNCTION derived.order_counts_keep();

CREATE TRIGGER order_counts_keep_update
  AFTER UPDATE ON orders
  FOR EACH ROW
  WHEN (OLD.customer_id IS DISTINCT FROM NEW.customer_id OR OLD.status IS DISTINCT FROM NEW.status)
  EXECUTE FUNCTION derived.order_counts_keep();

CREATE TRIGGER order_counts_keep_delete
  AFTER DELETE ON orders
  REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT
  EXECUTE FUNCTION derived.order_counts_keep();

CREATE FUNCTION derived.order_counts_clear() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM derived.order_counts;
  RETURN NULL;
END;
$$;

-- TRUNCATE fires no row or DELETE triggers.
CREATE TRIGGER order_counts_keep_truncate
  AFTER TRUNCATE ON orders
  FOR EACH STATEMENT
  EXECUTE FUNCTION derived.order_counts_clear();
