-- Order items as a collection (contract §4: GET /order-items?orderId=N).

-- name: ListOrderItems :many
-- {{where}}: fixed fragments from src/orders/items.ts; {{orderBy}}: the fixed
-- sort-key map; {{limit}}, {{offset}}: the parameter numbers after the filters'.
SELECT i.id, i.order_id, i.product_id, i.qty, i.unit_price::text AS unit_price, o.currency,
       (SELECT count(*) FROM order_items i JOIN orders o ON o.id = i.order_id WHERE {{where}}) AS total_count
FROM order_items i
JOIN orders o ON o.id = i.order_id
WHERE {{where}}
ORDER BY {{orderBy}}
LIMIT {{limit}} OFFSET {{offset}};

-- name: CountOrderItems :one
SELECT count(*) AS total_count
FROM order_items i
JOIN orders o ON o.id = i.order_id
WHERE {{where}};
