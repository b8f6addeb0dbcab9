-- Statements of the migration runner (src/db/migrate.ts).

-- name: AcquireMigrationLock :exec
-- Session-level: held across the per-migration transactions, released below.
SELECT pg_advisory_lock($1::bigint);

-- name: ReleaseMigrationLock :exec
SELECT pg_advisory_unlock($1::bigint);

-- name: CreateSchemaMigrations :exec
CREATE TABLE IF NOT EXISTS schema_migrations (
  version    text PRIMARY KEY,
  name       text NOT NULL,
  checksum   text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
);

-- name: ListAppliedMigrations :many
SELECT version, name, checksum FROM schema_migrations ORDER BY version;

-- name: RecordMigration :exec
INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3);
