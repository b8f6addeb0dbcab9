-- 0018: an order's items as the statements that read an order's row give them
-- to the serializer (GetOrder, ListOrders, ListOrdersKeptTotal,
-- RecordOrderCreated), in one place instead of written out in each (issue 42).
--
-- order_items_json(order_id) is the order's items as a JSON array, in id
-- order, each {"id","orderId","productId","qty","unitPrice"} with the price as
-- text (no float touches money); [] for an order without items. Called in
-- FROM (FROM orders o, order_items_json(o.id) it(items)), it is inlined into
-- the calling statement as order_json_v1 is (migration 0017): planned with the
-- statement, one aggregate over the order's items per order, never a function
-- call of its own. An aggregate without GROUP BY gives exactly one row, so
-- every order keeps its row.

CREATE FUNCTION order_items_json(order_id bigint) RETURNS SETOF json
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT coalesce(json_agg(json_build_object(
           'id', i.id, 'orderId', i.order_id, 'productId', i.product_id,
           'qty', i.qty, 'unitPrice', i.unit_price::text) ORDER BY i.id), '[]'::json)
  FROM order_items i
  WHERE i.order_id = order_items_json.order_id
$$;

COMMENT ON FUNCTION order_items_json(bigint) IS 'An order''s items as the statements reading its row give them to the serializer: a JSON array in id order, prices as text. Called in FROM, it is inlined.';
