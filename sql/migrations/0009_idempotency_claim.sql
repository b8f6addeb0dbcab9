-- 0009: claiming an idempotency key in one statement (SPEC §7;
-- sql/queries/idempotency.sql ClaimIdempotencyKey, src/idempotency.ts).
--
-- The request's transaction tries the key's advisory lock, then reads the
-- stored result. The read must come after the lock, with a snapshot taken
-- after it: a first request that commits and releases the lock between the
-- two must be seen, or its repeat, finding the lock free and no result,
-- would run again. One plain SELECT has one snapshot, taken before its lock
-- call; a VOLATILE PL/pgSQL function takes a new snapshot for each of its
-- statements (READ COMMITTED), so its read sees every result committed
-- before its lock was tried: the two steps keep their order and meaning in
-- one round trip.

CREATE FUNCTION idempotency_claim(p_user_id bigint, p_key text)
RETURNS TABLE (locked boolean, fingerprint text, status integer, headers jsonb, body bytea)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  taken boolean;
BEGIN
  -- The same lock key as every version of the service before this one.
  taken := pg_try_advisory_xact_lock(hashtextextended(p_user_id || ':' || p_key, 0));
  RETURN QUERY
    SELECT taken, k.fingerprint::text, k.status::integer, k.headers, k.body
    FROM (SELECT) AS one
    LEFT JOIN idempotency_keys k
      ON k.user_id = p_user_id AND k.key = p_key
     AND k.created_at > now() - interval '24 hours';
END;
$$;

COMMENT ON FUNCTION idempotency_claim(bigint, text) IS 'Tries the transaction-scoped advisory lock of (user, key), then reads the key''s stored result younger than 24 hours with a snapshot taken after the try: one row, locked plus the result or NULLs (SPEC §7; src/idempotency.ts).';
