-- Users (contract §2, §6).

-- name: GetUser :opt reads
-- params: id
SELECT id, email, name, role, created_at
FROM users
WHERE id = $1;

-- name: FindUserByEmail :opt reads
-- params: email
SELECT id, email, name, role, created_at
FROM users
WHERE lower(email) = lower($1);

-- name: InsertUser :one writes
-- params: email, name, role
INSERT INTO users (email, name, role)
VALUES ($1, $2, $3)
RETURNING id, email, name, role, created_at;

-- name: ListUsers :many reads
-- not null: total_count, sort_key
-- {{where}}: fixed fragments from src/users/handlers.ts (a customer sees only
-- their own record); {{orderBy}}, {{after}} (a cursor page's keyset) and
-- {{sortKey}}: from the fixed sort-key map; {{limit}}, {{offset}}: the
-- parameter numbers after those (src/db/page.ts).
SELECT id, email, name, role, created_at, (SELECT count(*) FROM users WHERE {{where}}) AS total_count,
       {{sortKey}} AS sort_key
FROM users
WHERE {{where}} AND {{after}}
ORDER BY {{orderBy}}
LIMIT {{limit}} OFFSET {{offset}};

-- name: CountUsers :one reads
-- not null: total_count
SELECT count(*) AS total_count
FROM users
WHERE {{where}};

-- name: ListDemoUsers :many reads
SELECT id, email, name, role, created_at
FROM users
WHERE lower(email) IN ('admin@example.com', 'customer@example.com')
ORDER BY id;
