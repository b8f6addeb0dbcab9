-- Statements of the migration runner (src/db/migrate.ts).

-- name: AcquireMigrationLock :exec writes
-- params: key
-- Transaction-level: released by the COMMIT or ROLLBACK of the migration's
-- own transaction, so no session keeps it (a transaction-mode pooler hands
-- sessions from client to client; contract §17).
SELECT pg_advisory_xact_lock($1::bigint);

-- name: CreateSchemaMigrations :exec writes
CREATE TABLE IF NOT EXISTS schema_migrations (
  version    text PRIMARY KEY,
  name       text NOT NULL,
  checksum   text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
);

-- name: ListAppliedMigrations :many reads
SELECT version, name, checksum FROM schema_migrations ORDER BY version;

-- name: RecordMigration :exec writes
-- params: version, name, checksum
INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3);
