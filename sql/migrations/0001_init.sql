-- 0001: users, their API tokens, and the product catalog.

CREATE TABLE users (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  email      text NOT NULL CHECK (email ~ '^[^@\s]+@[^@\s]+$' AND length(email) <= 254),
  name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  role       text NOT NULL DEFAULT 'customer' CHECK (role IN ('customer', 'admin')),
  created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE users IS 'People and systems that call the API; customers own orders, admins see everything (SPEC §6).';
-- E-mail addresses are unique regardless of case.
CREATE UNIQUE INDEX users_email_key ON users (lower(email));
-- Serves GET /users?sort=createdAt (id is the tie-breaker).
CREATE INDEX users_created_at_idx ON users (created_at, id);

CREATE TABLE api_tokens (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  token_hash bytea NOT NULL UNIQUE CHECK (length(token_hash) = 32),
  scopes     text[] NOT NULL CHECK (scopes <@ ARRAY[
               'orders:read', 'orders:write', 'payments:read', 'payments:write',
               'users:read', 'users:write', 'events:read', 'webhooks:write']::text[]),
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz,
  revoked_at timestamptz,
  CHECK (expires_at IS NULL OR expires_at > created_at)
);
COMMENT ON TABLE api_tokens IS 'Bearer tokens (SPEC §6). Only the SHA-256 of the token is kept; the token itself is shown once, when created.';
COMMENT ON COLUMN api_tokens.token_hash IS 'SHA-256 of the whole token string, ord_ prefix included.';
-- Serves token list --user.
CREATE INDEX api_tokens_user_id_idx ON api_tokens (user_id);

CREATE TABLE products (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  sku        text NOT NULL UNIQUE CHECK (sku ~ '^[A-Z0-9-]{1,64}$'),
  name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  price      numeric(12, 2) NOT NULL CHECK (price >= 0),
  currency   char(3) NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE products IS 'The catalog that prices order items (SPEC §2). Public.';
COMMENT ON COLUMN products.currency IS 'ISO 4217 code.';
-- Serves GET /products?sort=createdAt (id is the tie-breaker).
CREATE INDEX products_created_at_idx ON products (created_at, id);
