-- Idempotency keys (SPEC §7; src/idempotency.ts).

-- name: LockIdempotencyKey :one
-- Taken at the start of the request's transaction and held until it ends: a
-- second request with the same user and key that finds it taken is still
-- running alongside the first, and gets 409 idempotency-key-in-use.
SELECT pg_try_advisory_xact_lock(hashtextextended($1::bigint || ':' || $2::text, 0)) AS locked;

-- name: FindIdempotencyKey :one
-- The stored result of a key younger than 24 hours.
SELECT fingerprint, status, headers, body
FROM idempotency_keys
WHERE user_id = $1 AND key = $2
  AND created_at > now() - interval '24 hours';

-- name: StoreIdempotencyKey :exec
-- Stores a result in the transaction of its effect. An expired row for the
-- same key (not yet purged) is replaced.
INSERT INTO idempotency_keys (user_id, key, fingerprint, status, headers, body)
VALUES ($1, $2, $3, $4, $5::text::jsonb, $6)
ON CONFLICT (user_id, key) DO UPDATE
SET fingerprint = excluded.fingerprint, status = excluded.status, headers = excluded.headers,
    body = excluded.body, created_at = now()
WHERE idempotency_keys.created_at <= now() - interval '24 hours';

-- name: PurgeIdempotencyKeys :exec
DELETE FROM idempotency_keys WHERE created_at <= now() - interval '24 hours';
