/**
 * The import graph of src/**\/*.ts (test/support/import-graph.ts reads it):
 * no import cycle, type-only imports included, and every import going from
 * a layer to the same or a lower one.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { findings, MAX_FILE_LINES, MAX_FUNCTION_LINES, sourceFiles } from '../../scripts/check-size.mjs';
import {
  buildImportGraph,
  extractImports,
  findCycles,
  formatCycle,
  type Arc,
  type ImportEdge,
} from '../support/import-graph.ts';

/**
 * The layers, low to high. docs/architecture.md draws this table: change
 * both together. A file may import files of lower ranks and of its own
 * folder; files of the features rank may also import other features (the
 * cycle test keeps them acyclic). Folders are the first level under src/;
 * `src/` itself holds the entry points.
 */
const LAYERS: readonly { readonly rank: number; readonly name: string; readonly folders: readonly string[] }[] = [
  { rank: 0, name: 'base', folders: ['src/base/'] }, // logger.ts, version.ts
  { rank: 1, name: 'http', folders: ['src/http/'] }, // pure HTTP rules, router, node-adapter bridge
  { rank: 2, name: 'config', folders: ['src/config/'] }, // config.ts, env-file.ts
  { rank: 3, name: 'db', folders: ['src/db/'] },
  {
    rank: 4,
    name: 'auth, metrics, limits, replica, outbox',
    folders: ['src/auth/', 'src/metrics/', 'src/limits/', 'src/replica/', 'src/outbox/'],
  },
  { rank: 5, name: 'openapi', folders: ['src/openapi/'] },
  // the request pipeline, RequestContext/RouteSpec, idempotency runner, generic collection route
  { rank: 6, name: 'pipeline', folders: ['src/pipeline/'] },
  {
    rank: 7,
    name: 'features',
    folders: [
      'src/catalog/',
      'src/users/',
      'src/orders/',
      'src/payments/',
      'src/events/',
      'src/webhooks/',
      'src/ops/',
      'src/pages/',
      'src/problems/',
    ],
  },
  { rank: 8, name: 'service', folders: ['src/service/'] }, // server.ts, routes.ts, seed.ts: assembly
  { rank: 9, name: 'the tool', folders: ['src/cli/'] }, // the commands of cli.ts, their help, the command line
  { rank: 10, name: 'entry points', folders: ['src/'] }, // main.ts, cli.ts, entry.ts
];
/** The rank whose folders may import one another. */
const FEATURES = 7;

const ROOT = new URL('../..', import.meta.url).pathname;

/** `src/x/` for any file under src/x/, `src/` for a file directly in src/. */
function folderOf(file: string): string {
  const parts = file.split('/');
  return parts.length > 2 ? `${parts[0]}/${parts[1]}/` : `${parts[0]}/`;
}

function layerOf(file: string): { rank: number; name: string; folder: string } | undefined {
  const folder = folderOf(file);
  const layer = LAYERS.find((l) => l.folders.includes(folder));
  return layer === undefined ? undefined : { rank: layer.rank, name: layer.name, folder };
}

/** Why `edge` breaks the layering, or `undefined` when it does not. */
function layerViolation(edge: ImportEdge): string | undefined {
  const from = layerOf(edge.from);
  const to = layerOf(edge.to);
  if (from === undefined || to === undefined) return undefined; // the placement test names them
  if (to.rank < from.rank) return undefined;
  if (to.rank === from.rank && (from.folder === to.folder || from.rank === FEATURES)) return undefined;
  const what = to.rank > from.rank ? 'a higher layer' : 'another folder of its layer';
  return `${from.folder} (${from.name}, rank ${from.rank}) imports ${what}: ${to.folder} (${to.name}, rank ${to.rank})`;
}

function where(edge: ImportEdge): string {
  return `${edge.from}:${edge.line} imports ${edge.to}${edge.typeOnly ? ' (type-only)' : ''}`;
}

/** Fails with `title` and one line each when there are `lines`. */
function expectNone(lines: readonly string[], title: string): void {
  if (lines.length > 0) assert.fail(`${lines.length} ${title}:\n  ${lines.join('\n  ')}`);
}

const graph = buildImportGraph(ROOT, 'src');

describe('the import graph of src/', () => {
  it('finds the files and their imports', () => {
    assert.ok(graph.files.length > 20, `only ${graph.files.length} files under src/`);
    assert.ok(graph.edges.length > graph.files.length, `only ${graph.edges.length} imports between them`);
  });

  it('has every relative import resolve to a file (JSON included)', () => {
    const missing = graph.unresolved.map((u) => `${u.file}:${u.line} '${u.specifier}'`);
    expectNone(missing, 'relative imports resolve to no file');
  });

  it('has no import cycle', () => {
    const cycles = findCycles(graph.files, graph.edges).map((c) => formatCycle(c, graph.edges));
    expectNone(cycles, 'import cycles (type-only imports count)');
  });
});

describe('layers', () => {
  it('place every .ts file under src/', () => {
    const unplaced = graph.files.filter((f) => layerOf(f) === undefined);
    expectNone(
      unplaced,
      'files are in no layer of the table at the top of test/project/architecture.test.ts ' +
        '(a new folder is placed deliberately, and drawn in docs/architecture.md)',
    );
  });

  it('import only the same or a lower layer', () => {
    const violations = graph.edges.flatMap((e) => {
      const why = layerViolation(e);
      return why === undefined ? [] : [`${where(e)}: ${why}`];
    });
    expectNone(violations, 'imports break the layering');
  });

  it('keep src/auth/ and src/metrics/ apart', () => {
    const crossing = graph.edges.filter((e) => {
      const pair = [folderOf(e.from), folderOf(e.to)].sort().join(' ');
      return pair === 'src/auth/ src/metrics/';
    });
    expectNone(crossing.map(where), 'imports between src/auth/ and src/metrics/, which must not import each other');
  });

  it('keep features out of src/http/ and src/db/', () => {
    const features = new Set(LAYERS.find((l) => l.rank === FEATURES)?.folders);
    const bad = graph.edges.filter(
      (e) => ['src/http/', 'src/db/'].includes(folderOf(e.from)) && features.has(folderOf(e.to)),
    );
    expectNone(bad.map(where), 'imports of a feature from src/http/ or src/db/, which must import no feature');
  });

  it('let features import one another only one way: no two feature folders import each other', () => {
    const features = new Set(LAYERS.find((l) => l.rank === FEATURES)?.folders);
    const folders = [...features];
    const arcs = graph.edges
      .map((e) => ({ from: folderOf(e.from), to: folderOf(e.to) }))
      .filter((a) => a.from !== a.to && features.has(a.from) && features.has(a.to));
    const cycles = findCycles(folders, arcs).map((cycle) => cycle.join(' → '));
    expectNone(cycles, 'cycles between feature folders (an event written below them lives in src/outbox/)');
  });

  it('give the features their parts under the same names', () => {
    // routes.ts (what it serves), handlers.ts (a request in, an answer out), rules.ts (pure input schemas and
    // business rules), store.ts (its statements), representation.ts (rows to JSON and their schemas): a feature
    // folder with a part has it under that name; other files are named for what they are.
    const shaped = ['src/catalog/', 'src/users/', 'src/orders/', 'src/payments/', 'src/events/', 'src/webhooks/'];
    const named = (folder: string, file: string) => graph.files.includes(`${folder}${file}`);
    const missing = shaped.flatMap((folder) =>
      ['routes.ts', 'handlers.ts', 'representation.ts'].filter((f) => !named(folder, f)).map((f) => folder + f),
    );
    expectNone(missing, 'parts every resource feature has, missing');
    const strays = graph.files.filter((file) =>
      /\/(input|schema|transitions|targets|user-store|reads|endpoints|products|users|orders|payments)\.ts$/.test(file),
    );
    expectNone(strays, 'files named as parts were before the features took one shape');
  });

  it('keep src/http/ and src/pipeline/ out of src/db/', () => {
    const bad = graph.edges.filter(
      (e) => folderOf(e.from) === 'src/db/' && ['src/http/', 'src/pipeline/'].includes(folderOf(e.to)),
    );
    expectNone(bad.map(where), 'imports of src/http/ or src/pipeline/ from src/db/, which must import neither');
  });
});

describe('the checks themselves', () => {
  it('find the one cycle of a small graph, through a type-only import', () => {
    const arcs: Arc[] = [
      { from: 'a.ts', to: 'b.ts' },
      { from: 'b.ts', to: 'c.ts' },
      { from: 'c.ts', to: 'a.ts', typeOnly: true },
      { from: 'c.ts', to: 'd.ts' },
      { from: 'd.ts', to: 'e.ts' },
      { from: 'x.ts', to: 'a.ts' },
    ];
    const nodes = ['a.ts', 'b.ts', 'c.ts', 'd.ts', 'e.ts', 'x.ts'];
    assert.deepEqual(findCycles(nodes, arcs), [['a.ts', 'b.ts', 'c.ts', 'a.ts']]);
    const expected = 'a.ts → b.ts → c.ts → a.ts  (type-only: c.ts → a.ts)';
    assert.equal(formatCycle(['a.ts', 'b.ts', 'c.ts', 'a.ts'], arcs), expected);
  });

  it('find a file importing itself', () => {
    assert.deepEqual(
      findCycles(
        ['a.ts', 'b.ts'],
        [
          { from: 'a.ts', to: 'b.ts' },
          { from: 'b.ts', to: 'b.ts' },
        ],
      ),
      [['b.ts', 'b.ts']],
    );
  });

  it('find no cycle in an acyclic graph', () => {
    const arcs: Arc[] = [
      { from: 'a.ts', to: 'b.ts' },
      { from: 'a.ts', to: 'c.ts' },
      { from: 'b.ts', to: 'c.ts', typeOnly: true },
      { from: 'c.ts', to: 'd.ts' },
    ];
    assert.deepEqual(findCycles(['a.ts', 'b.ts', 'c.ts', 'd.ts'], arcs), []);
  });

  it('read every form of import, over lines, and none in comments or strings', () => {
    const source = [
      "import a from './a.ts';",
      'import {',
      '  b,',
      '  type B,',
      "} from '../b.ts';",
      "import type { C } from './c.ts';",
      "import './d.ts';",
      "export { e } from './e.ts';",
      "export type { F } from './f.ts';",
      "export * as g from './g.ts';",
      "const h = await import('./h.ts');",
      "type I = typeof import('./i.ts');",
      "import pkg from '../../package.json' with { type: 'json' };",
      "// import x from './comment.ts';",
      "/* export * from './block.ts'; */",
      'const s = "import y from \'./string.ts\'";',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: source text for the scanner, a template literal in it
      "const t = `import z from './template.ts' ${await import('./in-template.ts')}`;",
      'const re = /import(.)from/;',
      'export const j = 1;',
      'export { j as k };',
      'const m = import.meta.url;',
    ].join('\n');
    const found = extractImports(source).map((r) => [r.specifier, r.line, r.typeOnly, r.form]);
    assert.deepEqual(found, [
      ['./a.ts', 1, false, 'import'],
      ['../b.ts', 2, false, 'import'],
      ['./c.ts', 6, true, 'import'],
      ['./d.ts', 7, false, 'side-effect'],
      ['./e.ts', 8, false, 'export'],
      ['./f.ts', 9, true, 'export'],
      ['./g.ts', 10, false, 'export'],
      ['./h.ts', 11, false, 'dynamic'],
      ['./i.ts', 12, true, 'dynamic'],
      ['../../package.json', 13, false, 'import'],
      ['./in-template.ts', 17, false, 'dynamic'],
    ]);
  });

  it('place files by folder and judge imports by rank', () => {
    const edge = (from: string, to: string): ImportEdge => ({ from, to, line: 1, typeOnly: false, specifier: '' });
    assert.equal(layerViolation(edge('src/orders/routes.ts', 'src/http/router.ts')), undefined);
    assert.equal(layerViolation(edge('src/orders/routes.ts', 'src/users/routes.ts')), undefined);
    assert.equal(layerViolation(edge('src/main.ts', 'src/cli.ts')), undefined);
    assert.match(layerViolation(edge('src/http/router.ts', 'src/pipeline/pipeline.ts')) ?? '', /higher layer/);
    assert.match(layerViolation(edge('src/auth/tokens.ts', 'src/metrics/route.ts')) ?? '', /another folder/);
    assert.equal(layerOf('src/somewhere/x.ts'), undefined);
    assert.equal(layerOf('src/orders/deep/x.ts')?.rank, FEATURES);
  });
});

describe('the size of the source (scripts/check-size.mjs, also run by make lint)', () => {
  const limits = `${MAX_FILE_LINES} lines a file, ${MAX_FUNCTION_LINES} a function of its own`;
  it(`keeps every file under src/ within ${limits}`, () => {
    const found = sourceFiles().flatMap((file) => findings(file, readFileSync(join(ROOT, file), 'utf8')));
    assert.deepEqual(found, []);
  });

  it('counts a function without the functions written inside it, and names what is over', () => {
    const body = (n: number) => Array.from({ length: n }, (_, i) => `  const v${i} = ${i};`).join('\n');
    const nested = `export function outer() {\n${body(70)}\n  const inner = () => {\n${body(70)}\n  };\n}\n`;
    assert.deepEqual(findings('src/x.ts', nested), []);
    const long = `const handle = async () => {\n${body(80)}\n};\n`;
    assert.deepEqual(findings('src/x.ts', long), [
      `src/x.ts:1: function handle has 82 lines of its own (at most ${MAX_FUNCTION_LINES})`,
    ]);
    const file = `${body(MAX_FILE_LINES + 1)}\n`;
    assert.deepEqual(findings('src/x.ts', file), [`src/x.ts: ${MAX_FILE_LINES + 1} lines (at most ${MAX_FILE_LINES})`]);
  });
});

/** The string literals of TypeScript `source` that read as an SQL statement: a keyword, then more words. */
function sqlTexts(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const literals = code.match(/'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`(?:[^`\\]|\\.)*`/g) ?? [];
  const statement =
    /^\s*(SELECT|INSERT|UPDATE|DELETE|WITH|BEGIN|COMMIT|ROLLBACK|SAVEPOINT|LOCK|SHOW|SET|CREATE|ALTER|DROP)\s+\S/;
  return literals.map((literal) => literal.slice(1, -1)).filter((text) => statement.test(text));
}

describe('SQL lives in sql/', () => {
  it('no file under src/ holds an SQL statement in a string (statements are named in sql/queries/)', () => {
    const found = sourceFiles().flatMap((file) =>
      sqlTexts(readFileSync(join(ROOT, file), 'utf8')).map((text) => `${file}: ${text.slice(0, 60)}`),
    );
    assert.deepEqual(found, []);
  });

  it('tells a statement from a command tag, a word in a message or a statement in a comment', () => {
    const source = [
      "const probe = () => sql.unsafe('SELECT 1');",
      'const text = `UPDATE orders SET x = 1`;',
      "if (tag !== 'COMMIT') fail();",
      "redis.call('SET', key);",
      '// sql.unsafe("SELECT 2")',
      "/* 'DELETE FROM orders' */ const message = 'select a product first';",
    ].join('\n');
    assert.deepEqual(sqlTexts(source), ['SELECT 1', 'UPDATE orders SET x = 1']);
  });
});

describe('the driver as published, patches aside', () => {
  it('is never changed at run time: no property of a pool or a reserved connection is assigned in src/', () => {
    const assignment = /\b(sql|reserved|pool)\.\w+\s*=[^=>]/;
    const found = sourceFiles().flatMap((file) =>
      readFileSync(join(ROOT, file), 'utf8')
        .split('\n')
        .map((line, i) => ({ line, at: `${file}:${i + 1}` }))
        .filter(({ line }) => !/^\s*(\*|\/\/)/.test(line) && assignment.test(line))
        .map(({ at, line }) => `${at}: ${line.trim()}`),
    );
    assert.deepEqual(found, []);
  });
});
