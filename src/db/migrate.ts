/**
 * The migration runner (contract §12): `sql/migrations/NNNN_name.sql` in order, each in its own transaction,
 * recorded with a checksum. Each transaction takes a transaction-level advisory lock before reading what is applied,
 * so of processes that start at once one applies the next file while the others wait; a session-level lock would
 * not hold behind a transaction-mode pooler, whose clients share sessions.
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

/** Applies the migrations `db` lacks and returns their names; an applied file that changed throws. */
export async function migrate(db: Database, migrations: readonly Migration[] = readMigrations()): Promise<string[]> {
  const done: string[] = [];
  for (;;) {
    // One transaction per file, and one last that finds nothing to do.
    const next = await db.transaction(async (tx) => {
      await tx.unsafe(db.statement('AcquireMigrationLock').text, [ADVISORY_LOCK_KEY]);
      await tx.unsafe(db.statement('CreateSchemaMigrations').text);
      const rows = await tx.unsafe<{ version: string; name: string; checksum: string }[]>(
        db.statement('ListAppliedMigrations').text,
      );
      const pending = firstPending(migrations, new Map(rows.map((row) => [row.version, row])));
      if (pending === undefined) return undefined;
      try {
        // No parameters: the simple query protocol, which takes a file of several statements.
        await tx.unsafe(pending.text);
        await tx.unsafe(db.statement('RecordMigration').text, [pending.version, pending.name, pending.checksum]);
      } catch (error) {
        throw new MigrationError(`migration ${pending.name} failed: ${(error as Error).message}`, { cause: error });
      }
      return pending;
    });
    if (next === undefined) return done;
    done.push(next.name);
  }
}

/** The first migration not applied yet; throws when an applied one's file has changed. */
function firstPending(
  migrations: readonly Migration[],
  applied: ReadonlyMap<string, { name: string; checksum: string }>,
): Migration | undefined {
  let first: Migration | undefined;
  for (const migration of migrations) {
    const previous = applied.get(migration.version);
    if (previous === undefined) {
      first ??= migration;
      continue;
    }
    if (previous.checksum !== migration.checksum || previous.name !== migration.name) {
      throw new MigrationError(
        `migration ${migration.name} was changed after it was applied (applied as ${previous.name} with ` +
          `checksum ${previous.checksum.slice(0, 12)}…, ` +
          `the file now has ${migration.checksum.slice(0, 12)}…); restore it and put the change in a new ` +
          'migration',
      );
    }
  }
  return first;
}
