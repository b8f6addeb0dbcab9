/**
 * Named SQL statements, sqlc style: every query the service runs lives in a
 * `.sql` file under `sql/queries/`, each statement under a header
 *
 *     -- name: GetProduct :one reads
 *
 * naming it, its result shape (`:one`, `:many`, `:exec`) and whether it may
 * change anything (`reads` or `writes`; a lock taken is a write). The files
 * are read once at start-up; TypeScript refers to statements by name and
 * passes values as parameters only.
 */
import { readSqlFile, sqlFileNames } from './sql-files.ts';

export type ResultShape = 'one' | 'many' | 'exec';

export interface Statement {
  readonly name: string;
  readonly shape: ResultShape;
  readonly text: string;
  readonly file: string;
  /**
   * Its header says `writes`: it may change data or take a lock. Sent outside a transaction and not answered,
   * it may have been done (contract §17, cancellation.ts); it never runs on a read replica. A `reads` statement
   * changes nothing (test/db/statement-writes.test.ts checks each against PostgreSQL).
   */
  readonly writes: boolean;
}

export class StatementError extends Error {
  override name = 'StatementError';
}

const HEADER = /^--\s*name:\s*([A-Za-z][A-Za-z0-9]*)\s+:(one|many|exec)\s+(reads|writes)\s*$/;
const ANY_HEADER = /^--\s*name:/;

/**
 * Splits one file's text into its named statements.
 *
 * @example
 * parseStatements('-- name: Ping :one reads\nSELECT 1;', 'x.sql')[0]?.text // 'SELECT 1'
 */
export function parseStatements(source: string, file: string): Statement[] {
  const statements: Statement[] = [];
  let current: { name: string; shape: ResultShape; writes: boolean; lines: string[] } | undefined;
  const flush = () => {
    if (current === undefined) return;
    const text = current.lines.join('\n').trim().replace(/;\s*$/, '');
    if (text === '') throw new StatementError(`${file}: statement ${current.name} is empty`);
    statements.push({ name: current.name, shape: current.shape, text, file, writes: current.writes });
  };
  for (const line of source.split('\n')) {
    const header = HEADER.exec(line.trim());
    if (header) {
      flush();
      current = {
        name: header[1] as string,
        shape: header[2] as ResultShape,
        writes: header[3] === 'writes',
        lines: [],
      };
    } else if (ANY_HEADER.test(line.trim())) {
      throw new StatementError(`${file}: "${line.trim()}" must be "-- name: Name :one|:many|:exec reads|writes"`);
    } else if (current !== undefined) {
      current.lines.push(line);
    } else if (line.trim() !== '' && !line.trim().startsWith('--')) {
      throw new StatementError(`${file}: SQL before the first "-- name:" header`);
    }
  }
  flush();
  return statements;
}

/** Reads every `.sql` file in `dir` into a map by statement name; a duplicate name throws. */
export function loadStatements(dir: string): ReadonlyMap<string, Statement> {
  const byName = new Map<string, Statement>();
  for (const file of sqlFileNames(dir)) {
    for (const statement of parseStatements(readSqlFile(dir, file), file)) {
      const existing = byName.get(statement.name);
      if (existing)
        throw new StatementError(`statement ${statement.name} is defined in both ${existing.file} and ${file}`);
      byName.set(statement.name, statement);
    }
  }
  return byName;
}
