-- Idempotency keys (contract §7; src/idempotency.ts).

-- name: ClaimIdempotencyKey :one writes
-- params: userId, key
-- not null: locked
-- Taken at the start of the request's transaction: tries the advisory lock
-- of (user, key), held until the transaction ends, and then reads the stored
-- result of the key younger than 24 hours, with a snapshot taken after the
-- try (idempotency_claim, sql/migrations/0009_idempotency_claim.sql), so a
-- result committed before the lock came free is always seen. One row:
-- locked, and the stored fingerprint, status, headers and body or NULLs.
-- Lock not taken and no result: a second request with the same user and key
-- is running alongside the first, and gets 409 idempotency-key-in-use.
SELECT locked, fingerprint, status, headers, body
FROM idempotency_claim($1, $2);

-- name: StoreIdempotencyKey :exec writes
-- params: userId, key, fingerprint, status, headers, body
-- Stores a result in the transaction of its effect. An expired row for the
-- same key (not yet purged) is replaced.
INSERT INTO idempotency_keys (user_id, key, fingerprint, status, headers, body)
VALUES ($1, $2, $3, $4, $5::text::jsonb, $6)
ON CONFLICT (user_id, key) DO UPDATE
SET fingerprint = excluded.fingerprint, status = excluded.status, headers = excluded.headers,
    body = excluded.body, created_at = now()
WHERE idempotency_keys.created_at <= now() - interval '24 hours';

-- name: PurgeIdempotencyKeys :exec writes
DELETE FROM idempotency_keys WHERE created_at <= now() - interval '24 hours';
