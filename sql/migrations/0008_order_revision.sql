-- 0008: the revision of an order (SPEC §9). An order's entity tag derives
-- from (id, revision, API version, media type), so If-None-Match on an order
-- is answered from this column alone, without building the representation.
-- The database keeps it, not the service: every change to an order row or to
-- its items bumps it in the same transaction, whoever makes the change (this
-- service, another process, an operator in psql). A bump too many only costs
-- a client one full response; a missed one would serve stale bytes, so the
-- triggers bump on every write and never look at what changed.

ALTER TABLE orders ADD COLUMN revision bigint NOT NULL DEFAULT 1;
COMMENT ON COLUMN orders.revision IS 'Grows by at least 1 in the transaction of every change to the order row or its items (triggers orders_track_revision and order_items_bump_revision_*); never set by the service. Part of the order''s entity tag (SPEC §9).';

-- Every UPDATE of the row, whatever it sets (revision included: no statement
-- can set it back). Named to fire after orders_set_updated_at (BEFORE ROW
-- triggers fire in name order), whose WHEN compares the row as the statement
-- left it: a statement that changes nothing still leaves updated_at alone.
CREATE FUNCTION orders_track_revision() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW.revision := OLD.revision + 1;
  RETURN NEW;
END;
$$;

CREATE TRIGGER orders_track_revision
  BEFORE UPDATE ON orders
  FOR EACH ROW
  EXECUTE FUNCTION orders_track_revision();

-- Item changes touch their orders once per statement (a new order's five
-- items, or a replacement of its lines, bump it once). The UPDATE goes
-- through orders_track_revision (and moves updated_at). The orders of items
-- deleted with their order (ON DELETE CASCADE) are gone and match nothing.
-- PostgreSQL allows a transition table only on a trigger of one event: one
-- trigger per event, one function for all three.
CREATE FUNCTION order_items_bump_revision() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    UPDATE orders o SET revision = o.revision + 1
    WHERE o.id IN (SELECT n.order_id FROM new_items n);
  ELSIF TG_OP = 'UPDATE' THEN
    -- An item moved to another order changes both.
    UPDATE orders o SET revision = o.revision + 1
    WHERE o.id IN (SELECT n.order_id FROM new_items n UNION SELECT d.order_id FROM old_items d);
  ELSE
    UPDATE orders o SET revision = o.revision + 1
    WHERE o.id IN (SELECT d.order_id FROM old_items d);
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER order_items_bump_revision_insert
  AFTER INSERT ON order_items
  REFERENCING NEW TABLE AS new_items
  FOR EACH STATEMENT
  EXECUTE FUNCTION order_items_bump_revision();

CREATE TRIGGER order_items_bump_revision_update
  AFTER UPDATE ON order_items
  REFERENCING OLD TABLE AS old_items NEW TABLE AS new_items
  FOR EACH STATEMENT
  EXECUTE FUNCTION order_items_bump_revision();

CREATE TRIGGER order_items_bump_revision_delete
  AFTER DELETE ON order_items
  REFERENCING OLD TABLE AS old_items
  FOR EACH STATEMENT
  EXECUTE FUNCTION order_items_bump_revision();

-- TRUNCATE order_items empties every order: every order changes.
CREATE FUNCTION order_items_truncated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE orders SET revision = revision + 1;
  RETURN NULL;
END;
$$;

CREATE TRIGGER order_items_bump_revision_truncate
  AFTER TRUNCATE ON order_items
  FOR EACH STATEMENT
  EXECUTE FUNCTION order_items_truncated();
