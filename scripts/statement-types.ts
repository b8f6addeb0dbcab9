/**
 * Generates src/db/statements.generated.ts: the TypeScript types of every named
 * statement's parameters and row, as PostgreSQL describes the statement on a
 * migrated database (the extended protocol's Describe: each parameter's type,
 * each column's name, type and, for a table's column, the table and column it
 * comes from). A column is NULL-able unless its table's column is NOT NULL (and
 * no outer join can empty it) or the header lists it under `-- not null:`.
 *
 *     make statement-types     (on DATABASE_URL, else an in-memory embedded database)
 *
 * test/db/statement-types.test.ts generates the file again on each database of
 * the suite and fails when it differs from the committed one: a statement or a
 * migration changed without the types, and so the code that uses them.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import type { Sql } from '../src/db/connection.ts';
import type { TransactionSql } from '../src/db/transaction.ts';
import { openDatabase, QUERIES_DIR } from '../src/db/database.ts';
import { migrate } from '../src/db/migrate.ts';
import { loadStatements, type Statement } from '../src/db/statements.ts';

export const TYPES_FILE = fileURLToPath(new URL('../src/db/statements.generated.ts', import.meta.url));

/** What a column of each type is once the driver parsed it (src/db/connection.ts: int8 as a number). */
const ROW_TYPES: Readonly<Record<number, string>> = {
  16: 'boolean',
  17: 'Uint8Array',
  18: 'string',
  19: 'string',
  20: 'number',
  21: 'number',
  23: 'number',
  25: 'string',
  26: 'number',
  114: 'unknown',
  700: 'number',
  701: 'number',
  1007: 'number[]',
  1009: 'string[]',
  1016: 'number[]',
  1042: 'string',
  1043: 'string',
  1082: 'Date',
  1114: 'Date',
  1184: 'Date',
  1700: 'string',
  2278: 'null',
  3802: 'unknown',
};

/** What a parameter of each type takes (the driver serializes it: a bigint from a number or its text). */
const PARAM_TYPES: Readonly<Record<number, string>> = {
  ...ROW_TYPES,
  20: 'number | string',
  114: 'unknown',
  1007: 'readonly (number | string | null)[]',
  1009: 'readonly (string | null)[]',
  1016: 'readonly (number | string | null)[]',
  1082: 'Date | string',
  1114: 'Date | string',
  1184: 'Date | string',
  1700: 'string | number',
  3802: 'unknown',
};

/** A composed statement's fragments, filled so that PostgreSQL can describe it (the row does not depend on them). */
const FRAGMENTS: Readonly<Record<string, string>> = {
  where: 'TRUE',
  after: 'TRUE',
  totalWhere: 'TRUE',
  orderBy: '1',
  sortKey: 'ARRAY[]::text[]',
  limit: '1',
  offset: '0',
};

const OUTER_JOIN = /\b(LEFT|RIGHT|FULL)\s+(OUTER\s+)?JOIN\b/i;
/** More than one command: sent as a simple query by its one caller (transaction.ts), never by name. */
const SEVERAL_COMMANDS = /;\s*\S/;

interface Described {
  readonly types: readonly number[];
  readonly columns: readonly { name: string; type: number; table: number; number: number }[] | null;
}

function typeOf(map: Readonly<Record<number, string>>, oid: number, where: string): string {
  const found = map[oid];
  if (found === undefined) throw new Error(`${where}: PostgreSQL type ${oid} has no TypeScript type here`);
  return found;
}

/** The columns of tables that are NOT NULL, as `table.number`. */
async function notNullColumns(sql: Sql | TransactionSql): Promise<Set<string>> {
  const rows = await sql.unsafe<{ at: string }[]>(
    `SELECT attrelid::bigint || '.' || attnum AS at FROM pg_attribute
     WHERE attnotnull AND attnum > 0 AND attrelid >= 16384`,
  );
  return new Set(rows.map((r) => r.at));
}

/**
 * The values a text column (or each element of a text[] one) may hold, as a union of literals, where a CHECK of
 * that column alone lists them (`status IN ('pending', 'paid')`, `scopes <@ ARRAY['orders:read']`): by
 * `table.number`.
 */
async function checkedValues(sql: Sql | TransactionSql): Promise<Map<string, string>> {
  const rows = await sql.unsafe<{ at: string; check: string }[]>(
    `SELECT conrelid::bigint || '.' || conkey[1] AS at, pg_get_constraintdef(oid) AS check FROM pg_constraint
     WHERE contype = 'c' AND cardinality(conkey) = 1 AND conrelid >= 16384`,
  );
  const found = new Map<string, string>();
  for (const { at, check } of rows) {
    const listed =
      /^CHECK \(\(\w+ (?:= ANY \(ARRAY|<@ ARRAY)\[((?:'[^']*'::text(?:, )?)+)\]\)?\)\)$/.exec(check)?.[1] ??
      /^CHECK \(\(\w+ = ('[^']*'::text)\)\)$/.exec(check)?.[1];
    if (listed === undefined) continue;
    const values = [...listed.matchAll(/'([^']*)'::text/g)].map((m) => `'${m[1]}'`);
    found.set(at, values.join(' | '));
  }
  return found;
}

/** What the schema says of its columns: which are NOT NULL, and which hold one of a few listed values. */
interface Schema {
  readonly notNull: Set<string>;
  readonly values: Map<string, string>;
}

async function typesOf(sql: Sql | TransactionSql, statement: Statement, schema: Schema): Promise<string> {
  const { name, params, shape } = statement;
  const text = statement.text.replace(/\{\{(\w+)\}\}/g, (_, f: string) => FRAGMENTS[f] ?? `{{${f}}}`);
  const described = (await sql.unsafe(text).describe()) as unknown as Described;
  const composed = text !== statement.text;
  if (!composed && params.length !== described.types.length)
    throw new Error(
      `${name}: its header names ${params.length} parameters, PostgreSQL counts ${described.types.length}`,
    );
  const typed = described.types.map((oid, i) => {
    const param = params[i] as (typeof params)[number];
    return `${param.name}: ${typeOf(PARAM_TYPES, oid, `${name} $${i + 1}`)}${param.nullable ? ' | null' : ''}`;
  });
  const columns = described.columns ?? [];
  const names = new Set(columns.map((c) => c.name));
  const stray = statement.notNull.filter((n) => !names.has(n));
  if (stray.length > 0) throw new Error(`${name}: "-- not null: ${stray.join(', ')}" names no column of its row`);
  const outer = OUTER_JOIN.test(text);
  const fields = columns.map((c) => {
    const at = `${c.table}.${c.number}`;
    const base = typeOf(ROW_TYPES, c.type, `${name}.${c.name}`);
    const values = c.table === 0 ? undefined : schema.values.get(at);
    const type = values === undefined ? base : base === 'string[]' ? `(${values})[]` : values;
    const kept = statement.notNull.includes(c.name) || (!outer && c.table !== 0 && schema.notNull.has(at));
    return { name: c.name, type, values, nullable: !kept && type !== 'unknown' };
  });
  // As the formatter lays it out (make lint): a tuple on one line when it fits, every object expanded.
  const oneLine = `    params: [${typed.join(', ')}];`;
  const paramLines = composed
    ? ['    params: readonly unknown[];']
    : oneLine.length <= 120
      ? [oneLine]
      : ['    params: [', ...typed.map((p) => `      ${p},`), '    ];'];
  const rowLines =
    shape === 'exec' || fields.length === 0
      ? ['    row: never;']
      : ['    row: {', ...fields.flatMap(fieldLines), '    };'];
  return [
    `  ${name}: {`,
    `    kind: '${shape}';`,
    `    composed: ${composed};`,
    ...paramLines,
    ...rowLines,
    '  };',
  ].join('\n');
}

/** A row's field as the formatter lays it out: a union too long for a line, one member a line. */
function fieldLines(field: { name: string; type: string; values: string | undefined; nullable: boolean }): string[] {
  const line = `      ${field.name}: ${field.type}${field.nullable ? ' | null' : ''};`;
  if (line.length <= 120 || field.values === undefined) return [line];
  const members = [...field.values.split(' | '), ...(field.nullable ? ['null'] : [])].map((v) => `        | ${v}`);
  if (!field.type.endsWith('[]')) return [`      ${field.name}:`, ...members.slice(0, -1), `${members.at(-1)};`];
  if (field.nullable) throw new Error(`${field.name}: a NULL-able array of listed values has no layout here`);
  return [`      ${field.name}: (`, ...members, '      )[];'];
}

/** The text of statements.generated.ts for the statements of sql/queries/ on `sql`, a migrated database. */
export async function generate(sql: Sql | TransactionSql): Promise<string> {
  const schema = { notNull: await notNullColumns(sql), values: await checkedValues(sql) };
  const lines: string[] = [];
  const simple: string[] = [];
  for (const statement of [...loadStatements(QUERIES_DIR).values()].sort((a, b) => a.name.localeCompare(b.name))) {
    if (SEVERAL_COMMANDS.test(statement.text.replace(/--[^\n]*/g, ''))) simple.push(statement.name);
    else lines.push(await typesOf(sql, statement, schema));
  }
  return [
    '// Generated by `make statement-types` (scripts/statement-types.ts) from sql/queries/ as PostgreSQL',
    '// describes each statement on the migrated schema: do not edit. test/db/statement-types.test.ts fails when',
    '// this differs from what the SQL gives. Not run by name (several commands, sent as simple queries):',
    `// ${simple.join(', ')}.`,
    '',
    'export interface Statements {',
    ...lines,
    '}',
    '',
  ].join('\n');
}

/** Generates the file on `url`'s server (in a database of its own, dropped after) or an in-memory database. */
export async function generateOn(url: string | undefined): Promise<string> {
  const real = url !== undefined && url !== '' && url !== 'memory:';
  const name = `orders_types_${process.pid}`;
  const admin = real ? postgres(url, { max: 1, onnotice: () => {} }) : undefined;
  await admin?.unsafe(`CREATE DATABASE ${name}`);
  try {
    const target = real ? Object.assign(new URL(url), { pathname: `/${name}` }).href : 'memory:';
    const db = await openDatabase({ databaseUrl: target, dataDir: '', poolMax: 1, prepare: true });
    try {
      await migrate(db);
      return await generate(db.sql);
    } finally {
      await db.close(0);
    }
  } finally {
    await admin?.unsafe(`DROP DATABASE IF EXISTS ${name}`);
    await admin?.end();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(TYPES_FILE, await generateOn(process.env.DATABASE_URL));
  console.log(`wrote ${TYPES_FILE}`);
}
