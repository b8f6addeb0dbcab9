-- name: Ping :one
-- Readiness (contract §1): the database answers.
SELECT 1 AS ok;
