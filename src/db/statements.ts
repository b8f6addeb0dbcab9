/**
 * Named SQL statements, sqlc style: every query lives in a `.sql` file under `sql/queries/`, under a header
 *
 *     -- name: GetProduct :opt reads
 *     -- params: id
 *     -- not null: price
 *
 * naming it, its result (`:one` exactly one row, `:opt` none or one, `:many`, `:exec`), whether it may change
 * anything (`reads` or `writes`; a lock taken is a write), its parameters `$1…` by name (`?`: may be NULL), and
 * which of its computed columns are never NULL (a table's column says so itself).
 */
import { readSqlFile, sqlFileNames } from './sql-files.ts';

export type ResultShape = 'one' | 'opt' | 'many' | 'exec';

/** A parameter as the header names it. */
export interface NamedParam {
  readonly name: string;
  readonly nullable: boolean;
}

export interface Statement {
  readonly name: string;
  readonly shape: ResultShape;
  readonly text: string;
  readonly file: string;
  /** May change data or take a lock: never run on a read replica; sent alone and not answered, maybe done. */
  readonly writes: boolean;
  readonly params: readonly NamedParam[];
  readonly notNull: readonly string[];
}

export class StatementError extends Error {
  override name = 'StatementError';
}

const HEADER = /^--\s*name:\s*([A-Za-z][A-Za-z0-9]*)\s+:(one|opt|many|exec)\s+(reads|writes)\s*$/;
const ANY_HEADER = /^--\s*name:/;
const PARAMS = /^--\s*params:\s*(.*)$/;
const NOT_NULL = /^--\s*not null:\s*(.*)$/;
const IDENTIFIER = /^[a-z][A-Za-z0-9]*\??$/;
const COLUMN = /^[a-z_][a-z0-9_]*$/;

function names(list: string, form: RegExp, line: string, file: string): string[] {
  // A line that ends in a comma goes on on the next.
  const found = list
    .replace(/,\s*$/, '')
    .split(',')
    .map((n) => n.trim());
  if (found.some((n) => !form.test(n))) throw new StatementError(`${file}: "${line}" lists a name it cannot take`);
  return found;
}

/** Splits one file's text into its named statements. */
export function parseStatements(source: string, file: string): Statement[] {
  const statements: Statement[] = [];
  type Current = { name: string; shape: ResultShape; writes: boolean; lines: string[] };
  let current: (Current & { params: NamedParam[]; notNull: string[] }) | undefined;
  const flush = () => {
    if (current === undefined) return;
    const { name, shape, writes, params, notNull } = current;
    const text = current.lines.join('\n').trim().replace(/;\s*$/, '');
    if (text === '') throw new StatementError(`${file}: statement ${name} is empty`);
    statements.push({ name, shape, text, file, writes, params, notNull });
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
        params: [],
        notNull: [],
      };
    } else if (current !== undefined && PARAMS.test(line.trim())) {
      current.params = current.params.concat(
        names(PARAMS.exec(line.trim())?.[1] as string, IDENTIFIER, line.trim(), file).map((n) =>
          n.endsWith('?') ? { name: n.slice(0, -1), nullable: true } : { name: n, nullable: false },
        ),
      );
    } else if (current !== undefined && NOT_NULL.test(line.trim())) {
      current.notNull = names(NOT_NULL.exec(line.trim())?.[1] as string, COLUMN, line.trim(), file);
    } else if (ANY_HEADER.test(line.trim())) {
      throw new StatementError(`${file}: "${line.trim()}" must be "-- name: Name :one|:opt|:many|:exec reads|writes"`);
    } else if (current !== undefined) {
      current.lines.push(line);
    } else if (line.trim() !== '' && !line.trim().startsWith('--')) {
      throw new StatementError(`${file}: SQL before the first "-- name:" header`);
    }
  }
  flush();
  return statements;
}

/** Reads every `.sql` file in `dir` into a map by statement name. */
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

/**
 * Refuses a statement run by a method that does not take its declared result (a bug in one of the two); a
 * composed statement is a page (`:many`) or the count beside it (`:one`).
 */
export function checkShape(found: Statement, shape: ResultShape, composed: boolean): void {
  const taken =
    found.shape === shape || (found.shape === 'opt' && shape === 'one') || (composed && found.shape === 'one');
  if (!taken)
    throw new StatementError(`${found.name} is declared :${found.shape} in ${found.file} but was run as :${shape}`);
}

/** Refuses a `:one` or `:opt` that returned more than one row, and a missing row `one()` needs. */
export function checkRows(found: Statement, shape: ResultShape, composed: boolean, rows: number): void {
  if ((found.shape === 'one' || found.shape === 'opt') && rows > 1)
    throw new StatementError(`${found.name} is declared :${found.shape} but returned ${rows} rows`);
  if (shape === 'one' && !composed && rows === 0)
    throw new StatementError(`${found.name} returned no row where one must be (:${found.shape}, run with one())`);
}

const PLACEHOLDER = /\{\{([a-zA-Z]+)\}\}/g;

/** The text of a composed statement, its `{{name}}` placeholders filled. */
export function fill(statement: Statement, fragments: Readonly<Record<string, string>>): string {
  return statement.text.replace(PLACEHOLDER, (_, key: string) => {
    const fragment = fragments[key];
    if (fragment === undefined) throw new Error(`statement ${statement.name} needs the fragment {{${key}}}`);
    return fragment;
  });
}
