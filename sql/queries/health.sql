-- name: Ping :one
-- Readiness (SPEC §1): the database answers.
SELECT 1 AS ok;
