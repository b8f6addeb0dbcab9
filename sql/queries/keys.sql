-- name: KeepServiceKey :exec
-- Writes the key named $1 as $2 (32 random bytes) unless one is kept already:
-- of processes that start at once, the first to commit writes it and the
-- others keep theirs to themselves (docs/http.md, "Cursor pages").
INSERT INTO service_keys (name, key) VALUES ($1, $2)
ON CONFLICT (name) DO NOTHING;

-- name: ServiceKey :one
-- The key named $1, as every process uses it (read after KeepServiceKey, in
-- a statement of its own: it sees the row a concurrent start committed).
SELECT key FROM service_keys WHERE name = $1;
