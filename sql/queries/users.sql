-- Users (SPEC §2, §6).

-- name: GetUser :one
SELECT id, email, name, role, created_at
FROM users
WHERE id = $1;

-- name: FindUserByEmail :one
SELECT id, email, name, role, created_at
FROM users
WHERE lower(email) = lower($1);

-- name: InsertUser :one
INSERT INTO users (email, name, role)
VALUES ($1, $2, $3)
RETURNING id, email, name, role, created_at;

-- name: ListUsers :many
-- $1: only this user's record (a customer), or NULL for all (an admin).
-- $2: page size, $3: offset. {{orderBy}}: from the fixed sort-key map in src/users/users.ts.
SELECT id, email, name, role, created_at, count(*) OVER () AS total
FROM users
WHERE ($1::bigint IS NULL OR id = $1)
ORDER BY {{orderBy}}
LIMIT $2 OFFSET $3::bigint;

-- name: CountUsers :one
SELECT count(*) AS total
FROM users
WHERE ($1::bigint IS NULL OR id = $1);

-- name: ListDemoUsers :many
SELECT id, email, name, role, created_at
FROM users
WHERE lower(email) IN ('admin@example.com', 'customer@example.com')
ORDER BY id;
