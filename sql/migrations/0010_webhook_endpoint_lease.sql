-- 0010: at most one delivery attempt in flight per webhook endpoint across
-- all processes (contract §17; docs/events.md, "Delivery").
--
-- An endpoint's lease is taken by ClaimDeliveries (sql/queries/events.sql),
-- in the statement that claims the endpoint's head delivery, and only while
-- it is free (NULL or expired); RecordAttempt releases it. It ends when the
-- claimed delivery's own lease does, so a process that dies mid-attempt frees
-- both at once. The holder is named by the claim itself, the delivery and the
-- attempt number the claim gave it (each claim of a delivery counts one more
-- attempt, so the pair never repeats): the release is fenced by it, and an
-- attempt that outlived its lease frees nothing that a newer claim holds.
-- No foreign key on the holder: it is a fence, read only to compare.

ALTER TABLE webhook_endpoints
  ADD COLUMN lease_until timestamptz,
  ADD COLUMN lease_delivery_id bigint,
  ADD COLUMN lease_attempt integer,
  ADD CONSTRAINT webhook_endpoints_lease_check
    CHECK ((lease_until IS NULL) = (lease_delivery_id IS NULL) AND (lease_until IS NULL) = (lease_attempt IS NULL));

COMMENT ON COLUMN webhook_endpoints.lease_until IS 'While a delivery attempt to this endpoint is in flight in some process, the end of its lease; NULL when none is. An expired lease is free: its holder died or outlived it.';
COMMENT ON COLUMN webhook_endpoints.lease_delivery_id IS 'The delivery whose attempt holds the lease (with lease_attempt); NULL when the lease is free. A fence, not a reference.';
COMMENT ON COLUMN webhook_endpoints.lease_attempt IS 'The attempt number of that delivery that holds the lease: only that attempt''s result releases it.';
