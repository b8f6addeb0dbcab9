-- The product catalog (SPEC §2, §4). Public.

-- name: GetProduct :one
SELECT id, sku, name, price, currency, created_at
FROM products
WHERE id = $1;

-- name: ListProducts :many
-- One page and the total in one round trip. {{orderBy}} is replaced by a
-- list built only from the fixed sort-key map in src/catalog/products.ts.
-- $1: page size, $2: offset.
SELECT id, sku, name, price, currency, created_at, count(*) OVER () AS total
FROM products
ORDER BY {{orderBy}}
LIMIT $1 OFFSET $2::bigint;

-- name: CountProducts :one
-- The total when the page lies past the last one (and so carries no count).
SELECT count(*) AS total FROM products;
