-- The service's transactions (src/db/transaction.ts): BEGIN, COMMIT and
-- ROLLBACK on a reserved connection, sent as simple queries; savepoints are
-- named there. A COMMIT whose answer was lost is looked up by the
-- transaction's id (contract §17: outcome-unknown only when it cannot be told).

-- name: BeginTransaction :many writes
-- Begins, and reads the id the transaction will commit under (assigned now:
-- every transaction of the service writes, or is refused before it does).
BEGIN;
SELECT txid_current() AS xid;

-- name: CommitTransaction :exec writes
-- Answered ROLLBACK when the transaction was aborted: nothing committed.
COMMIT;

-- name: RollbackTransaction :exec writes
ROLLBACK;

-- name: TransactionStatus :one reads
-- params: xid
-- What came of transaction $1 (a COMMIT whose connection was lost):
-- committed, aborted, in progress, or NULL once too old to know.
SELECT txid_status($1) AS status;
