-- 0020: the triggers a POST /orders fires do less for what it writes: one
-- order, its items, and an event nobody is subscribed to (issue 43; the cost
-- of every trigger, docs/performance.md). What they keep is unchanged: the
-- counts of 0007 and 0011, and the revision rule of 0008 and 0015.
--
-- A statement trigger fires for a statement however many rows it wrote; a
-- keyed POST's event inserted no delivery (no endpoint subscribed) and still
-- planned and ran an upsert of nothing. The counts' upsert grouped its rows
-- by GROUPING SETS and sorted them, the same for one order as for a
-- thousand; and the items' trigger opened an UPDATE of orders (its thirteen
-- indexes, its triggers) to bump no row when the order is new.

-- The counts of orders (0007). The one-order change (a POST, a DELETE of one
-- order) upserts its two rows as values: customer 0's row then the
-- customer's, the key order of the general path, which a user id (never 0)
-- cannot collide with. A statement that wrote no order writes no count.
CREATE OR REPLACE FUNCTION derived.order_counts_keep() RETURNS trigger
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
  IF customer_ids IS NULL THEN
    RETURN NULL;
  ELSIF cardinality(customer_ids) = 1 THEN
    INSERT INTO derived.order_counts AS c (customer_id, status, stripe, n)
    VALUES (0, statuses[1], pg_backend_pid() % 64, deltas[1]),
           (customer_ids[1], statuses[1], pg_backend_pid() % 64, deltas[1])
    ON CONFLICT (customer_id, status, stripe) DO UPDATE SET n = c.n + excluded.n;
    RETURN NULL;
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

-- The counts of deliveries (0011): a statement that wrote no delivery (an
-- event with no subscribed endpoint) writes no count; one delivery upserts
-- its one row as values.
CREATE OR REPLACE FUNCTION derived.webhook_delivery_counts_keep() RETURNS trigger
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
  IF statuses IS NULL THEN
    RETURN NULL;
  ELSIF cardinality(statuses) = 1 THEN
    INSERT INTO derived.webhook_delivery_counts AS c (status, stripe, n)
    VALUES (statuses[1], pg_backend_pid() % 64, deltas[1])
    ON CONFLICT (status, stripe) DO UPDATE SET n = c.n + excluded.n;
    RETURN NULL;
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

-- The revision bump of items (0015). Inserted items whose orders this
-- transaction wrote (a new order's) bump nothing, as before; that is now
-- found by reading those orders before an UPDATE is run. When it is not so,
-- the UPDATE is the one of 0015, which decides again under its row locks. An
-- order whose current version this transaction wrote cannot change under it
-- (the transaction holds its row lock), so a read that finds only such
-- orders stays true until the commit.
CREATE OR REPLACE FUNCTION order_items_bump_revision() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF EXISTS (SELECT 1 FROM orders o
               WHERE o.id IN (SELECT n.order_id FROM new_items n) AND o.xmin <> pg_current_xact_id()::xid) THEN
      UPDATE orders o SET revision = o.revision + 1
      WHERE o.id IN (SELECT n.order_id FROM new_items n) AND o.xmin <> pg_current_xact_id()::xid;
    END IF;
  ELSIF TG_OP = 'UPDATE' THEN
    -- An item moved to another order changes both.
    UPDATE orders o SET revision = o.revision + 1
    WHERE o.id IN (SELECT n.order_id FROM new_items n UNION SELECT d.order_id FROM old_items d)
      AND o.xmin <> pg_current_xact_id()::xid;
  ELSE
    UPDATE orders o SET revision = o.revision + 1
    WHERE o.id IN (SELECT d.order_id FROM old_items d) AND o.xmin <> pg_current_xact_id()::xid;
  END IF;
  RETURN NULL;
END;
$$;

