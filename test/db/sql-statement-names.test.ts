/**
 * The named SQL statements of sql/queries/*.sql and the code agree: every
 * statement name the code passes exists, and every statement is named
 * somewhere in src/.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { QUERIES_DIR } from '../../src/db/database.ts';
import { loadStatements } from '../../src/db/statements.ts';
import { isStringLiteral, skipTypeArguments, tokenize, type Token } from '../support/import-graph.ts';

/** Methods of the database handle whose first argument is a statement's name (`db.one<Row>('GetOrder', …)`). */
const STATEMENT_METHODS = new Set(['one', 'opt', 'many', 'exec', 'composed', 'page', 'statement']);
/** Functions every top-level string literal argument of which names a statement (`fetchPage(db, 'A', 'B', …)`). */
const STATEMENT_FUNCTIONS = new Set(['fetchPage']);
/** Properties whose string literal values, or union of them, name statements (`list: 'A' | 'B'`; a batched read's). */
const STATEMENT_PROPERTIES = new Set(['list', 'count', 'single', 'batch']);
/** Tokens after which `name:` starts a property or a member (not the `:` of a `?:` conditional). */
const BEFORE_PROPERTY = new Set(['{', ',', ';', '(', 'readonly']);

interface NamedStatement {
  readonly name: string;
  readonly line: number;
  /** Where it stood: `.one(`, `fetchPage(` or `list:`. */
  readonly site: string;
}

/** The statement names `source` passes at its call sites, in order. */
function statementNamesIn(source: string): NamedStatement[] {
  const t = tokenize(source);
  const found: NamedStatement[] = [];
  const literalAt = (j: number) => {
    const token = t[j];
    return isStringLiteral(token) && [',', ')'].includes(t[j + 1]?.text ?? '') ? token : undefined;
  };
  for (let k = 0; k < t.length; k++) {
    const tok = t[k] as Token;
    if (tok.kind !== 'name') continue;
    const prev = t[k - 1];
    const method = (prev?.text === '.' || prev?.text === '?.') && STATEMENT_METHODS.has(tok.text);
    const fn = prev?.text !== '.' && prev?.text !== '?.' && STATEMENT_FUNCTIONS.has(tok.text);
    if (method || fn) {
      const open = skipTypeArguments(t, k + 1);
      if (t[open]?.text !== '(') continue;
      if (method) {
        const literal = literalAt(open + 1);
        if (literal) found.push({ name: literal.value as string, line: literal.line, site: `.${tok.text}(` });
        continue;
      }
      // A function: each argument that is a string literal, at the call's own depth.
      let depth = 0;
      for (let j = open; j < t.length; j++) {
        const text = t[j]?.kind === 'punct' ? t[j]?.text : undefined;
        if (text === '(' || text === '[' || text === '{') depth++;
        else if (text === ')' || text === ']' || text === '}') {
          depth--;
          if (depth === 0) break;
        } else if (depth === 1 && (t[j - 1]?.text === '(' || t[j - 1]?.text === ',')) {
          const literal = literalAt(j);
          if (literal) found.push({ name: literal.value as string, line: literal.line, site: `${tok.text}(` });
        }
      }
      continue;
    }
    if (STATEMENT_PROPERTIES.has(tok.text)) {
      const member = prev === undefined || BEFORE_PROPERTY.has(prev.text) || prev.line < tok.line;
      let j = k + 1;
      if (t[j]?.text === '?') j++;
      if (!member || t[j]?.text !== ':') continue;
      j++;
      if (t[j]?.text === '|') j++;
      for (; isStringLiteral(t[j]); j += 2) {
        const literal = t[j] as Token;
        found.push({ name: literal.value as string, line: literal.line, site: `${tok.text}:` });
        if (t[j + 1]?.text !== '|') break;
      }
    }
  }
  return found;
}

/** Every string literal's value in `source` (each quote; templates without substitution). */
function stringLiteralsIn(source: string): Set<string> {
  return new Set(tokenize(source).flatMap((token) => (isStringLiteral(token) ? [token.value] : [])));
}

const SRC = new URL('../../src/', import.meta.url).pathname;
const sources = (readdirSync(SRC, { recursive: true }) as string[])
  .filter((f) => f.endsWith('.ts'))
  .sort()
  .map((f) => ({ file: `src/${f}`, text: readFileSync(join(SRC, f), 'utf8') }));
const statements = loadStatements(QUERIES_DIR);

/** Fails with `title` and one line each when there are `lines`. */
function expectNone(lines: readonly string[], title: string): void {
  if (lines.length > 0) assert.fail(`${lines.length} ${title}:\n  ${lines.join('\n  ')}`);
}

describe('SQL statement names', () => {
  it('are all defined: each name the code passes is a statement of sql/queries/', () => {
    const named = sources.flatMap(({ file, text }) => statementNamesIn(text).map((n) => ({ file, ...n })));
    assert.ok(named.length > 40, `only ${named.length} statement names found in src/: is the extractor blind?`);
    const unknown = named
      .filter((n) => !statements.has(n.name))
      .map((n) => `${n.file}:${n.line} '${n.name}' (${n.site})`);
    expectNone(unknown, 'statement names in src/ that no sql/queries/*.sql file defines');
  });

  it('are all used: each statement of sql/queries/ is named somewhere in src/', () => {
    const literals = new Set(sources.flatMap(({ text }) => [...stringLiteralsIn(text)]));
    const unused = [...statements.values()]
      .filter((s) => !literals.has(s.name))
      .map((s) => `${s.name} (sql/queries/${s.file}, :${s.shape})`);
    expectNone(unused, 'statements of sql/queries/ that nothing in src/ names');
  });

  it('are found by the extractor, on a source written for it', () => {
    const source = [
      "const row = await db.one<Row>('GetA', [1]);",
      'const rows = await ctx.services.db.many<{ a: number; b: Array<string> }>(',
      "  'ListB',",
      '  [x],',
      ');',
      "await db.exec('DoC'); db?.composed(`ComposeD`, { where: 'TRUE' });",
      "const page = await fetchPage<Row>(db, 'ListE', 'CountE', { orderBy: 'id' }, [], query);",
      "const other = await fetchPage(db, { list: 'ListF', count: 'CountF' }, { where: 'TRUE' });",
      'interface Plan {',
      "  readonly list: 'ListG' | 'ListH';",
      "  count?: 'CountG'",
      '}',
      "connection.unsafe(db.statement('Stmt').text, [key]);",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: source text for the scanner, a template literal in it
      "const text = `${await db.one<Parameters<typeof f>[0]>('InTemplate')}`;",
      "// db.one('Commented');",
      "const s = \"db.one('InString')\"; const re = /db.one('InRegex')/;",
      "const m = PATTERN.exec(value); const spec = { schema: 'User', body: 'NewUser', list: LIST };",
      "const pick = wanted ? list : 'NotAStatement';",
      "await db.one(name, ['NotEither']);",
    ].join('\n');
    assert.deepEqual(
      statementNamesIn(source).map((n) => [n.name, n.line, n.site]),
      [
        ['GetA', 1, '.one('],
        ['ListB', 3, '.many('],
        ['DoC', 6, '.exec('],
        ['ComposeD', 6, '.composed('],
        ['ListE', 7, 'fetchPage('],
        ['CountE', 7, 'fetchPage('],
        ['ListF', 8, 'list:'],
        ['CountF', 8, 'count:'],
        ['ListG', 10, 'list:'],
        ['ListH', 10, 'list:'],
        ['CountG', 11, 'count:'],
        ['Stmt', 13, '.statement('],
        ['InTemplate', 14, '.one('],
      ],
    );
  });
});
