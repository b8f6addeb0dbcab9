-- name: Ping :one
-- Readiness (contract §1): the database answers.
SELECT 1 AS ok;

-- name: CurrentWalPosition :one
-- The primary's WAL position now, as text (`16/B374D848`): a write that
-- committed before this statement ran is at or before it (contract §17,
-- read-your-writes; src/replica/replica.ts).
SELECT pg_current_wal_lsn()::text AS lsn;

-- name: ReplicaPosition :one
-- What a streaming replica has replayed (NULL on a server that is no
-- standby), read by the replica's monitor (src/replica/replica.ts).
SELECT pg_is_in_recovery() AS recovery, pg_last_wal_replay_lsn()::text AS replayed;
