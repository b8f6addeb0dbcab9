-- Order items as a collection (contract §4: GET /order-items?orderId=N).

-- name: ListOrderItems :many reads
-- not null: unit_price, total_count, sort_key
-- {{where}}: fixed fragments from src/orders/handlers.ts; {{orderBy}}, {{after}}
-- (a cursor page's keyset) and {{sortKey}}: from the fixed sort-key map;
-- {{limit}}, {{offset}}: the parameter numbers after those (src/db/page.ts).
SELECT i.id, i.order_id, i.product_id, i.qty, i.unit_price::text AS unit_price, o.currency,
       (SELECT count(*) FROM order_items i JOIN orders o ON o.id = i.order_id WHERE {{where}}) AS total_count,
       {{sortKey}} AS sort_key
FROM order_items i
JOIN orders o ON o.id = i.order_id
WHERE {{where}} AND {{after}}
ORDER BY {{orderBy}}
LIMIT {{limit}} OFFSET {{offset}};

-- name: CountOrderItems :one reads
-- not null: total_count
SELECT count(*) AS total_count
FROM order_items i
JOIN orders o ON o.id = i.order_id
WHERE {{where}};
