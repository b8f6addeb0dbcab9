-- name: Ping :one reads
-- not null: ok
-- Start-up's wait (src/db/wait.ts) and the circuit's probe (src/db/circuit.ts): the database answers.
SELECT 1 AS ok;

-- name: Readiness :one reads
-- not null: recovery, read_only
-- Readiness (contract §1, §17): the database answers, and can take writes:
-- not a standby (in recovery), not read-only (default_transaction_read_only,
-- or a server restarted read-only).
SELECT pg_is_in_recovery() AS recovery,
       current_setting('transaction_read_only') = 'on' AS read_only;

-- name: CurrentWalPosition :one reads
-- not null: lsn
-- The primary's WAL position now, as text (`16/B374D848`): a write that
-- committed before this statement ran is at or before it (contract §17,
-- read-your-writes; src/replica/replica.ts).
SELECT pg_current_wal_lsn()::text AS lsn;

-- name: ReplicaPosition :one reads
-- not null: recovery
-- What a streaming replica has replayed (NULL on a server that is no
-- standby), read by the replica's monitor (src/replica/replica.ts).
SELECT pg_is_in_recovery() AS recovery, pg_last_wal_replay_lsn()::text AS replayed;
