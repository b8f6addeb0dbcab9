/**
 * The migration runner (contract §12): `sql/migrations/NNNN_name.sql`, applied in
 * order, each in its own transaction, recorded with a SHA-256 checksum in
 * `schema_migrations`. A session-level advisory lock keeps two processes that
 * start at once from applying the same file; an applied file whose contents
 * changed stops start-up.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { readSqlFile, sqlFileNames, SQL_DIR } from './sql-files.ts';
import type { Database } from './database.ts';

export const MIGRATIONS_DIR = join(SQL_DIR, 'migrations');

// An arbitrary constant, the same in every process of this service: "orders" in ASCII.
const ADVISORY_LOCK_KEY = 0x6f7264657273;
const FILE_NAME = /^(\d{4})_[a-z0-9_]+\.sql$/;

export interface Migration {
  readonly version: string;
  readonly name: string;
  readonly checksum: string;
  readonly text: string;
}

export class MigrationError extends Error {
  override name = 'MigrationError';
}

/** Reads the migration files of `dir` in order; a misnamed file or a repeated number throws. */
export function readMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  const migrations: Migration[] = [];
  for (const name of sqlFileNames(dir)) {
    const match = FILE_NAME.exec(name);
    if (!match) throw new MigrationError(`${name}: migration files are named NNNN_lowercase_words.sql`);
    const version = match[1] as string;
    if (migrations.some((m) => m.version === version))
      throw new MigrationError(`two migrations are numbered ${version}`);
    const text = readSqlFile(dir, name);
    migrations.push({ version, name, text, checksum: createHash('sha256').update(text).digest('hex') });
  }
  return migrations;
}

/**
 * Applies the migrations `db` lacks and returns the names of those it applied.
 * Throws `MigrationError` when an applied migration's file has changed.
 */
export async function migrate(db: Database, migrations: readonly Migration[] = readMigrations()): Promise<string[]> {
  const connection = await db.sql.reserve();
  try {
    await connection.unsafe(db.statement('AcquireMigrationLock').text, [ADVISORY_LOCK_KEY]);
    try {
      await connection.unsafe(db.statement('CreateSchemaMigrations').text);
      const rows = await connection.unsafe<{ version: string; name: string; checksum: string }[]>(
        db.statement('ListAppliedMigrations').text,
      );
      const applied = new Map(rows.map((row) => [row.version, row]));
      const done: string[] = [];
      for (const migration of migrations) {
        const previous = applied.get(migration.version);
        if (previous) {
          if (previous.checksum !== migration.checksum || previous.name !== migration.name) {
            throw new MigrationError(
              `migration ${migration.name} was changed after it was applied (applied as ${previous.name} with ` +
                `checksum ${previous.checksum.slice(0, 12)}…, ` +
                `the file now has ${migration.checksum.slice(0, 12)}…); restore it and put the change in a new ` +
                'migration',
            );
          }
          continue;
        }
        await connection.unsafe('BEGIN');
        try {
          await connection.unsafe(migration.text);
          await connection.unsafe(db.statement('RecordMigration').text, [
            migration.version,
            migration.name,
            migration.checksum,
          ]);
          await connection.unsafe('COMMIT');
        } catch (error) {
          await connection.unsafe('ROLLBACK');
          throw new MigrationError(`migration ${migration.name} failed: ${(error as Error).message}`, { cause: error });
        }
        done.push(migration.name);
      }
      return done;
    } finally {
      await connection.unsafe(db.statement('ReleaseMigrationLock').text, [ADVISORY_LOCK_KEY]);
    }
  } finally {
    connection.release();
  }
}
