-- 0015: a change to an order's items no longer bumps the order's revision
-- when the same transaction already wrote the order row (issue 35, the cost
-- of every trigger). A POST /orders inserted the order, then its items,
-- whose statement trigger updated the new row once more (revision 1 -> 2):
-- a second row version, its BEFORE UPDATE triggers, and about 0.05 ms of the
-- server's CPU per POST (docs/performance.md), for a revision no other
-- transaction could ever have seen. A transaction that writes an order's
-- items in several statements likewise bumps it once for them (an UPDATE of
-- the order row itself still bumps it, orders_track_revision).
--
-- The rule of 0008 still holds: the revision grows by at least 1 in the
-- transaction of every change to an order or its items. A row whose current
-- version this transaction wrote (its xmin is the transaction's id) was
-- either inserted by it, so that no earlier revision exists anywhere, or
-- updated by it, and every UPDATE of an order bumps its revision
-- (orders_track_revision). A row written under a savepoint carries the
-- savepoint's own id, not the transaction's: it is bumped as before, one bump
-- too many, which only costs a client one full response.

CREATE OR REPLACE FUNCTION order_items_bump_revision() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    UPDATE orders o SET revision = o.revision + 1
    WHERE o.id IN (SELECT n.order_id FROM new_items n) AND o.xmin <> pg_current_xact_id()::xid;
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
