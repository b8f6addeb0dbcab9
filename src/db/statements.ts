/**
 * Named SQL statements, sqlc style: every query the service runs lives in a
 * `.sql` file under `sql/queries/`, each statement under a header
 *
 *     -- name: GetProduct :one
 *
 * naming it and its result shape (`:one`, `:many`, `:exec`). The files are
 * read once at start-up; TypeScript refers to statements by name and passes
 * values as parameters only.
 */
import { readSqlFile, sqlFileNames } from './sql-files.ts';

export type ResultShape = 'one' | 'many' | 'exec';

export interface Statement {
  readonly name: string;
  readonly shape: ResultShape;
  readonly text: string;
  readonly file: string;
  /**
   * Whether it may change data: its text (comments aside) has INSERT, UPDATE, DELETE or MERGE, or calls a
   * function that could. Sent outside a transaction and not answered, such a statement may have been done
   * (contract §17); a read never was. Erring toward true costs only a vaguer answer.
   */
  readonly writes: boolean;
}

export class StatementError extends Error {
  override name = 'StatementError';
}

const HEADER = /^--\s*name:\s*([A-Za-z][A-Za-z0-9]*)\s+:(one|many|exec)\s*$/;

/**
 * Splits one file's text into its named statements.
 *
 * @example
 * parseStatements('-- name: Ping :one\nSELECT 1;', 'x.sql')[0]?.text // 'SELECT 1'
 */
export function parseStatements(source: string, file: string): Statement[] {
  const statements: Statement[] = [];
  let current: { name: string; shape: ResultShape; lines: string[] } | undefined;
  const flush = () => {
    if (current === undefined) return;
    const text = current.lines.join('\n').trim().replace(/;\s*$/, '');
    if (text === '') throw new StatementError(`${file}: statement ${current.name} is empty`);
    statements.push({ name: current.name, shape: current.shape, text, file, writes: mayWrite(text) });
  };
  for (const line of source.split('\n')) {
    const header = HEADER.exec(line.trim());
    if (header) {
      flush();
      current = { name: header[1] as string, shape: header[2] as ResultShape, lines: [] };
    } else if (current !== undefined) {
      current.lines.push(line);
    } else if (line.trim() !== '' && !line.trim().startsWith('--')) {
      throw new StatementError(`${file}: SQL before the first "-- name:" header`);
    }
  }
  flush();
  return statements;
}

// The service's own functions that write are named here too (sql/migrations/0014).
const WRITES = /\b(INSERT|UPDATE|DELETE|MERGE|nextval|setval|pg_advisory_xact_lock|idempotent_create_order)\b/i;
const LINE_COMMENT = /--[^\n]*/g;

/** Whether `text` may change data (see `Statement.writes`). */
function mayWrite(text: string): boolean {
  return WRITES.test(text.replace(LINE_COMMENT, ''));
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
