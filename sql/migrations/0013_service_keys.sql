-- 0013: the keys the service signs with, shared by every process that names
-- this database (contract §4: a collection's cursor is signed, and a cursor
-- one process made is taken back by any other).
--
-- A key is written once, by the first process that starts after this
-- migration (KeepServiceKey, sql/queries/keys.sql): 32 bytes from the
-- operating system's random source in that process (node:crypto), never
-- from SQL. It never leaves the database but to sign; it is not a secret of
-- the API (no answer carries it) and is never logged.

CREATE TABLE service_keys (
  name text PRIMARY KEY CHECK (name IN ('cursor')),
  key bytea NOT NULL CHECK (octet_length(key) = 32),
  created_at timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE service_keys IS 'Keys the service signs with, one row per use, shared by every process: cursor signs the cursors of collection pages (HMAC-SHA256).';
COMMENT ON COLUMN service_keys.key IS '32 random bytes, written once by the first process to start; changing it makes every cursor given out so far refused (400 invalid-query).';
