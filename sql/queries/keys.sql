-- name: KeepServiceKey :exec writes
-- params: name, key
-- Writes the key named $1 as $2 (32 random bytes) unless one is kept already:
-- of processes that start at once, the first to commit writes it and the
-- others keep theirs to themselves (docs/http.md, "Cursor pages").
INSERT INTO service_keys (name, key) VALUES ($1, $2)
ON CONFLICT (name) DO NOTHING;

-- name: ServiceKey :opt reads
-- params: name
-- The key named $1, as every process uses it (read after KeepServiceKey, in
-- a statement of its own: it sees the row a concurrent start committed).
SELECT key FROM service_keys WHERE name = $1;

-- name: CursorKeys :many reads
-- The keys cursors are opened with (contract §4): the current one, which
-- seals, first; then the one it replaced, if a rotation kept one.
SELECT name, key FROM service_keys
WHERE name IN ('cursor', 'cursor-previous')
ORDER BY name = 'cursor' DESC;

-- name: RotateCursorKey :opt writes
-- params: key
-- not null: rotated
-- Replaces the cursor key with $1 (32 random bytes) and keeps the one it
-- replaces as cursor-previous, which still opens the cursors given out
-- before (`orders keys rotate`). The key kept is the key this statement
-- read; the UPDATE replaces only that key, so of two rotations at once the
-- second changes nothing (no row: run it again). No row either when there is
-- no cursor key yet (the first start writes one).
WITH kept AS (
  INSERT INTO service_keys (name, key)
  SELECT 'cursor-previous', key FROM service_keys WHERE name = 'cursor'
  ON CONFLICT (name) DO UPDATE SET key = EXCLUDED.key, created_at = now()
  RETURNING key
)
UPDATE service_keys SET key = $1, created_at = now()
WHERE name = 'cursor' AND key = (SELECT key FROM kept)
RETURNING 1 AS rotated;
