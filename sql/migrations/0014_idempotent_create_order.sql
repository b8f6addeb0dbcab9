-- 0014: a keyed POST /orders in one statement, so one round trip (issue 35).
--
-- idempotent_create_order() does in the transaction of the one statement
-- that calls it (SELECT … FROM idempotent_create_order(…), sent alone, so
-- it commits or rolls back as a whole) what a keyed POST /orders did in six:
-- it claims the key (idempotency_claim, 0009: the advisory lock of (user,
-- key), then the stored result read with a snapshot taken after it), creates
-- the order and its items (CreateOrder), records its order.created event with
-- a pending delivery per subscribed endpoint (RecordOrderCreated), builds the
-- answer's JSON (GetOrderJson or GetOrderJsonV2) and stores the answer: 201,
-- its Content-Type, Location and ETag, and those bytes (StoreIdempotencyKey).
-- Each step is the statement of sql/queries/ it names, written out again here:
-- test/api/keyed-create.test.ts checks that its answer and what it stores
-- are a GET's, and that the order, its items, its event and its deliveries
-- are those the ordinary path writes. A change to one of those statements
-- needs a migration that replaces this function.
--
-- Its one row says what happened:
--   - a key already used (a stored result, or the lock held by a request
--     still running): locked and the stored result (or NULLs), as
--     idempotency_claim gives them; nothing written;
--   - a rule of CreateOrder refusing the order (an unknown customer or
--     product, currencies mixed, a total past numeric(12,2)): locked true,
--     everything else NULL; nothing written. The service then runs the
--     request the ordinary way, which decides the refusal again and stores
--     it (src/pipeline/idempotency.ts);
--   - the order made: status 201, order_id, order_revision and order_body,
--     the JSON text the answer carries, stored with it.

CREATE FUNCTION idempotent_create_order(
  p_user_id bigint,
  p_key text,
  p_fingerprint text,
  p_customer_id bigint,
  p_check_customer boolean,
  p_product_ids bigint[],
  p_quantities integer[],
  p_version integer,
  p_content_type text,
  p_location text,
  p_tag_suffix text
)
RETURNS TABLE (locked boolean, fingerprint text, status integer, headers jsonb, body bytea,
               order_id bigint, order_revision bigint, order_body text)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
  claim record;
  new_id bigint;
  new_revision bigint;
  new_body text;
BEGIN
  SELECT * INTO claim FROM idempotency_claim(p_user_id, p_key);
  IF claim.fingerprint IS NOT NULL OR NOT claim.locked THEN
    RETURN QUERY SELECT claim.locked, claim.fingerprint, claim.status, claim.headers, claim.body,
                        NULL::bigint, NULL::bigint, NULL::text;
    RETURN;
  END IF;

  -- CreateOrder.
  WITH lines AS (
    SELECT w.n, w.product_id, w.qty, p.id AS known_id, p.price, p.currency::text AS currency
    FROM unnest(p_product_ids, p_quantities) WITH ORDINALITY AS w (product_id, qty, n)
    LEFT JOIN products p ON p.id = w.product_id
  ),
  checked AS (
    SELECT (NOT p_check_customer OR EXISTS (SELECT 1 FROM users u WHERE u.id = p_customer_id)) AS customer_known,
           json_agg(l.currency ORDER BY l.n) AS currencies,
           count(*) = count(l.known_id) AND count(DISTINCT l.currency) = 1 AS one_known_currency,
           coalesce(sum(l.qty * l.price), 0) AS total
    FROM lines l
  ),
  new_order AS (
    INSERT INTO orders (customer_id, currency, total)
    SELECT p_customer_id, c.currencies ->> 0, c.total
    FROM checked c
    WHERE c.customer_known AND c.one_known_currency AND c.total <= 9999999999.99
    RETURNING id
  ),
  new_items AS (
    INSERT INTO order_items (order_id, product_id, qty, unit_price)
    SELECT new_order.id, l.product_id, l.qty, l.price
    FROM new_order, lines l
    ORDER BY l.n
  )
  SELECT (SELECT id FROM new_order) INTO new_id;
  IF new_id IS NULL THEN
    RETURN QUERY SELECT true, NULL::text, NULL::integer, NULL::jsonb, NULL::bytea,
                        NULL::bigint, NULL::bigint, NULL::text;
    RETURN;
  END IF;

  -- RecordOrderCreated's event and deliveries.
  WITH event AS (
    INSERT INTO events (type, customer_id, data)
    SELECT 'order.created', o.customer_id, jsonb_build_object(
             'id', o.id, 'customerId', o.customer_id, 'status', o.status,
             'total', jsonb_build_object('amount', o.total::text, 'currency', o.currency),
             'items', coalesce((SELECT jsonb_agg(jsonb_build_object(
                                  'id', i.id, 'orderId', i.order_id, 'productId', i.product_id, 'qty', i.qty,
                                  'unitPrice', jsonb_build_object('amount', i.unit_price::text, 'currency', o.currency))
                                ORDER BY i.id)
                                FROM order_items i WHERE i.order_id = o.id), '[]'::jsonb),
             'createdAt', to_char(o.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
             'updatedAt', to_char(o.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
    FROM orders o
    WHERE o.id = new_id
    RETURNING id, type
  )
  INSERT INTO webhook_deliveries (endpoint_id, event_id)
  -- FOR KEY SHARE: an endpoint deleted meanwhile drops out instead of failing the change.
  SELECT w.id, e.id
  FROM event e JOIN (SELECT id, events FROM webhook_endpoints FOR KEY SHARE) w ON e.type = ANY (w.events);

  -- GetOrderJson or GetOrderJsonV2: the answer's bytes.
  IF p_version = 1 THEN
    SELECT o.revision,
           (SELECT row_to_json(r)::text
            FROM (SELECT o.id, o.customer_id AS "customerId", o.status, o.currency, trim_scale(o.total) AS total,
                         (SELECT ('[' || coalesce(string_agg(row_to_json(i)::text, ',' ORDER BY i.id), '') || ']')::json
                          FROM (SELECT it.id, it.order_id AS "orderId", it.product_id AS "productId", it.qty,
                                       trim_scale(it.unit_price) AS "unitPrice"
                                FROM order_items it WHERE it.order_id = o.id) i) AS items,
                         to_char(o.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "createdAt",
                         to_char(o.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "updatedAt") r)
    INTO new_revision, new_body
    FROM orders o
    WHERE o.id = new_id;
  ELSE
    SELECT o.revision,
           (SELECT row_to_json(r)::text
            FROM (SELECT o.id, o.customer_id AS "customerId", o.status,
                         (SELECT row_to_json(m) FROM (SELECT o.total::text AS amount, o.currency) m) AS total,
                         (SELECT ('[' || coalesce(string_agg(row_to_json(i)::text, ',' ORDER BY i.id), '') || ']')::json
                          FROM (SELECT it.id, it.order_id AS "orderId", it.product_id AS "productId", it.qty,
                                       (SELECT row_to_json(m)
                                        FROM (SELECT it.unit_price::text AS amount, o.currency) m) AS "unitPrice"
                                FROM order_items it WHERE it.order_id = o.id) i) AS items,
                         to_char(o.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "createdAt",
                         to_char(o.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "updatedAt") r)
    INTO new_revision, new_body
    FROM orders o
    WHERE o.id = new_id;
  END IF;

  -- StoreIdempotencyKey: an expired row of the same key (not yet purged) is replaced.
  INSERT INTO idempotency_keys (user_id, key, fingerprint, status, headers, body)
  VALUES (p_user_id, p_key, p_fingerprint, 201,
          jsonb_build_object('content-type', p_content_type, 'location', p_location || new_id,
                             'etag', '"o' || new_id || 'r' || new_revision || p_tag_suffix),
          convert_to(new_body, 'UTF8'))
  ON CONFLICT (user_id, key) DO UPDATE
  SET fingerprint = excluded.fingerprint, status = excluded.status, headers = excluded.headers,
      body = excluded.body, created_at = now()
  WHERE idempotency_keys.created_at <= now() - interval '24 hours';

  RETURN QUERY SELECT true, NULL::text, 201, NULL::jsonb, NULL::bytea, new_id, new_revision, new_body;
END;
$$;

COMMENT ON FUNCTION idempotent_create_order(bigint, text, text, bigint, boolean, bigint[], integer[], integer, text, text, text) IS 'A keyed POST /orders in one statement: claims the key, creates the order and its items, records order.created and stores the 201 answer, or says why not (a key already used; a refusal, which the service then decides and stores the ordinary way). SPEC §7; src/orders/keyed-create.ts.';
