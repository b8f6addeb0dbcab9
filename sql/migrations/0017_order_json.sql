-- 0017: an order's representation in one place per version (issue 42). Each
-- statement that sends an order's JSON as the database built it (GetOrderJson,
-- GetOrderJsonV2, their batches, the keyed POST, the order.created event)
-- calls these functions instead of writing the representation out again; an
-- order's tag names the generation of this definition (src/orders/format.ts).
--
-- order_json_v1(o, order_id) is the order as API version 1 represents it
-- (contract §2), as JSON text ready to send: the bytes of
-- src/orders/representation.ts followed by JSON.stringify
-- (test/api/order-json.test.ts compares them on both databases): the same keys
-- in the same order, no whitespace (row_to_json, items joined with ","; json_agg
-- adds spaces); money as a JSON number in the decimal's shortest form
-- (trim_scale: 59.90 → 59.9, 10.00 → 10, exact for numeric(12,2) whatever
-- extra_float_digits says); times as Date.prototype.toISOString() writes them
-- (UTC, milliseconds truncated as a Date truncates). order_json_v2 is version
-- 2: money as {"amount":"59.90","currency":"EUR"}.
--
-- Called in FROM (FROM orders o, order_json_v1(o, o.id) j(body)), each is
-- inlined into the calling statement, as if written there: a set-returning,
-- STABLE, non-STRICT function of one SELECT in LANGUAGE sql is planned with
-- the statement, never run as a function of its own. One function per version,
-- not a CASE on the version: the executor sets up every branch of a CASE's
-- subqueries on each run (a fifth of the statement's CPU, issue 26). The
-- order's id comes again as order_id (and, for version 2, its currency as
-- currency) for the items' subquery: a field of the row there (o.id) makes
-- PostgreSQL build the whole row for every order to pass it in, where a field
-- of the row outside a subquery is read as the column itself.

CREATE FUNCTION order_json_v1(o orders, order_id bigint) RETURNS SETOF text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT row_to_json(r)::text
  FROM (SELECT o.id, o.customer_id AS "customerId", o.status, o.currency, trim_scale(o.total) AS total,
               (SELECT ('[' || coalesce(string_agg(row_to_json(i)::text, ',' ORDER BY i.id), '') || ']')::json
                FROM (SELECT it.id, it.order_id AS "orderId", it.product_id AS "productId", it.qty,
                             trim_scale(it.unit_price) AS "unitPrice"
                      FROM order_items it WHERE it.order_id = order_json_v1.order_id) i) AS items,
               to_char(o.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "createdAt",
               to_char(o.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "updatedAt") r
$$;

-- An amount of money as version 2 writes it: {"amount":"59.90","currency":"EUR"}.
CREATE TYPE money_v2 AS (amount text, currency text);

CREATE FUNCTION order_json_v2(o orders, order_id bigint, currency text) RETURNS SETOF text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT row_to_json(r)::text
  FROM (SELECT o.id, o.customer_id AS "customerId", o.status,
               row_to_json(ROW(o.total::text, o.currency)::money_v2) AS total,
               (SELECT ('[' || coalesce(string_agg(row_to_json(i)::text, ',' ORDER BY i.id), '') || ']')::json
                FROM (SELECT it.id, it.order_id AS "orderId", it.product_id AS "productId", it.qty,
                             row_to_json(ROW(it.unit_price::text, order_json_v2.currency)::money_v2) AS "unitPrice"
                      FROM order_items it WHERE it.order_id = order_json_v2.order_id) i) AS items,
               to_char(o.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "createdAt",
               to_char(o.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "updatedAt") r
$$;

-- The keyed POST of 0014, its order's JSON and its event's data now from the
-- functions above; nothing else changes.
CREATE OR REPLACE FUNCTION idempotent_create_order(
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
    SELECT 'order.created', o.customer_id, j.body::jsonb
    FROM orders o, order_json_v2(o, o.id, o.currency) j(body)
    WHERE o.id = new_id
    RETURNING id, type
  )
  INSERT INTO webhook_deliveries (endpoint_id, event_id)
  -- FOR KEY SHARE: an endpoint deleted meanwhile drops out instead of failing the change.
  SELECT w.id, e.id
  FROM event e JOIN (SELECT id, events FROM webhook_endpoints FOR KEY SHARE) w ON e.type = ANY (w.events);

  -- GetOrderJson or GetOrderJsonV2: the answer's bytes.
  IF p_version = 1 THEN
    SELECT o.revision, j.body INTO new_revision, new_body
    FROM orders o, order_json_v1(o, o.id) j(body)
    WHERE o.id = new_id;
  ELSE
    SELECT o.revision, j.body INTO new_revision, new_body
    FROM orders o, order_json_v2(o, o.id, o.currency) j(body)
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

COMMENT ON FUNCTION order_json_v1(orders, bigint) IS 'An order as API version 1 represents it, as JSON text (the bytes of src/orders/representation.ts); order_id: the order''s id again. Called in FROM, it is inlined.';
COMMENT ON FUNCTION order_json_v2(orders, bigint, text) IS 'An order as API version 2 represents it, as JSON text (the bytes of src/orders/representation.ts); order_id and currency: the order''s again. Called in FROM, it is inlined.';
COMMENT ON TYPE money_v2 IS 'An amount of money as API version 2 writes it in an order''s JSON (order_json_v2).';
