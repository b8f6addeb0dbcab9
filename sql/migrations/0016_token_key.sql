-- 0016: the key bearer tokens are tagged with (contract §10: a token carries
-- a tag a guess cannot forge without the service's key, checked before any
-- lookup; src/auth/tokens.ts), and room for the cursor key's predecessor
-- (contract §4: the key cursors are signed with can be rotated, the previous
-- one still verifying; `orders keys rotate`).
--
-- Each key is written as 0013 says: 32 random bytes from the first process
-- that needs it, never from SQL, never leaving the database but to sign.

ALTER TABLE service_keys DROP CONSTRAINT service_keys_name_check;
ALTER TABLE service_keys
  ADD CONSTRAINT service_keys_name_check CHECK (name IN ('cursor', 'cursor-previous', 'token'));

COMMENT ON TABLE service_keys IS 'Keys the service signs with, one row per use, shared by every process: cursor signs (and seals) the cursors of collection pages, cursor-previous is the one it replaced and still verifies, token tags bearer tokens (HMAC-SHA256).';
COMMENT ON COLUMN service_keys.key IS '32 random bytes, written once by the first process that needs it; replacing the token key makes every tagged token refused; the cursor key is rotated with orders keys rotate.';
