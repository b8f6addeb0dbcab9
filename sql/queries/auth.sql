-- Tokens and the principals behind them (contract §6).

-- name: FindActiveToken :opt reads
-- params: hash
-- The principal behind a token hash, when the token is neither expired nor revoked.
SELECT t.id AS token_id, t.scopes, t.expires_at, u.id AS user_id, u.role
FROM api_tokens t
JOIN users u ON u.id = t.user_id
WHERE t.token_hash = $1
  AND t.revoked_at IS NULL
  AND (t.expires_at IS NULL OR t.expires_at > now());

-- name: InsertToken :one writes
-- params: userId, hash, scopes, lifetimeSeconds?
-- $4: lifetime in seconds, or NULL for a token that never expires.
INSERT INTO api_tokens (user_id, token_hash, scopes, expires_at)
VALUES ($1, $2, $3::text[], now() + make_interval(secs => $4::double precision))
RETURNING id, user_id, scopes, created_at, expires_at, revoked_at;

-- name: ListTokensOfUser :many reads
-- params: userId
SELECT id, user_id, scopes, created_at, expires_at, revoked_at
FROM api_tokens
WHERE user_id = $1
ORDER BY id;

-- name: RevokeToken :opt writes
-- params: id
-- Revoking twice keeps the first revocation time.
UPDATE api_tokens
SET revoked_at = coalesce(revoked_at, now())
WHERE id = $1
RETURNING id, revoked_at;
