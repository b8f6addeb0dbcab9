-- The product catalog (contract §2, §4). Public.

-- name: GetProduct :opt reads
-- params: id
SELECT id, sku, name, price, currency, created_at
FROM products
WHERE id = $1;

-- name: ListProducts :many reads
-- not null: total_count, sort_key
-- One page and the total in one round trip. {{orderBy}}, {{after}} (a
-- cursor page's keyset) and {{sortKey}} are built only from the fixed
-- sort-key map in src/catalog/handlers.ts; {{where}} is TRUE (the catalog has
-- no filters); {{limit}}, {{offset}}: the parameter numbers after the
-- keyset's (src/db/page.ts).
SELECT id, sku, name, price, currency, created_at, (SELECT count(*) FROM products WHERE {{where}}) AS total_count,
       {{sortKey}} AS sort_key
FROM products
WHERE {{where}} AND {{after}}
ORDER BY {{orderBy}}
LIMIT {{limit}} OFFSET {{offset}};

-- name: CountProducts :one reads
-- not null: total_count
-- The total when the page lies past the last one (and so carries no count).
SELECT count(*) AS total_count FROM products WHERE {{where}};
