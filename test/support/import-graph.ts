/**
 * A small TypeScript scanner and the import graph of a source tree, for
 * test/project/architecture.test.ts (layers, cycles) and
 * test/db/sql-statement-names.test.ts (statement names at call sites).
 *
 * Node built-ins only: TypeScript 7's JavaScript API is an unstable bridge to
 * the native compiler, so the sources are read by `tokenize()` instead. It
 * knows what matters for finding imports and string literals: comments,
 * strings, template literals (with nested `${…}`), regular expression
 * literals and punctuation, each token with its line. It is no parser.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

export type TokenKind = 'name' | 'string' | 'template' | 'number' | 'regex' | 'punct';

export interface Token {
  readonly kind: TokenKind;
  /** The source text (a string's or template's without its quotes: see `value`). */
  readonly text: string;
  /** A string's value; a template's value when it has no substitution. */
  readonly value?: string;
  /** `'`, `"` or `` ` `` for strings and templates. */
  readonly quote?: string;
  /** 1-based line where the token starts. */
  readonly line: number;
}

/** Names after which a `/` starts a regular expression rather than dividing. */
const BEFORE_EXPRESSION = new Set([
  'return',
  'typeof',
  'instanceof',
  'in',
  'of',
  'new',
  'delete',
  'void',
  'throw',
  'case',
  'do',
  'else',
  'yield',
  'await',
]);

const ESCAPES: Readonly<Record<string, string>> = { n: '\n', t: '\t', r: '\r', b: '\b', f: '\f', v: '\v', 0: '\0' };

/** The tokens of `source`, comments dropped. */
export function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  const n = source.length;
  let i = 0;
  let line = 1;
  let braces = 0;
  // The brace depth at which each open `${` of a template started.
  const substitutions: number[] = [];

  const regexMayStart = (): boolean => {
    const prev = tokens.at(-1);
    if (prev === undefined) return true;
    if (prev.kind === 'name') return BEFORE_EXPRESSION.has(prev.text);
    if (prev.kind !== 'punct') return false;
    return prev.text !== ')' && prev.text !== ']';
  };

  /** Reads a template from just after its `` ` `` or a substitution's `}`; pushes one token. */
  const readTemplate = (start: number, startLine: number, head: boolean) => {
    let j = start;
    let cooked = '';
    while (j < n) {
      const c = source[j] as string;
      if (c === '\\') {
        const e = source[j + 1] ?? '';
        if (e === '\n') line++;
        cooked += ESCAPES[e] ?? e;
        j += 2;
      } else if (c === '`') {
        const value = head ? { value: cooked } : {}; // a whole template, without substitution
        tokens.push({ kind: 'template', text: source.slice(start, j), quote: '`', line: startLine, ...value });
        i = j + 1;
        return;
      } else if (c === '$' && source[j + 1] === '{') {
        tokens.push({ kind: 'template', text: source.slice(start, j), quote: '`', line: startLine });
        substitutions.push(braces);
        i = j + 2;
        return;
      } else {
        if (c === '\n') line++;
        cooked += c;
        j++;
      }
    }
    i = n;
  };

  while (i < n) {
    const c = source[i] as string;
    const next = source[i + 1];
    if (c === '\n') {
      line++;
      i++;
    } else if (c === ' ' || c === '\t' || c === '\r' || c === '\f' || c === '\v' || c === '\uFEFF' || c === '\u00A0') {
      i++;
    } else if (c === '/' && next === '/') {
      const end = source.indexOf('\n', i);
      i = end === -1 ? n : end;
    } else if (c === '/' && next === '*') {
      const end = source.indexOf('*/', i + 2);
      const stop = end === -1 ? n : end + 2;
      for (let j = i; j < stop; j++) if (source[j] === '\n') line++;
      i = stop;
    } else if (c === "'" || c === '"') {
      let j = i + 1;
      let cooked = '';
      while (j < n && source[j] !== c && source[j] !== '\n') {
        if (source[j] === '\\') {
          const e = source[j + 1] ?? '';
          if (e === '\n') line++;
          else cooked += ESCAPES[e] ?? e;
          j += 2;
        } else {
          cooked += source[j];
          j++;
        }
      }
      tokens.push({ kind: 'string', text: source.slice(i + 1, j), value: cooked, quote: c, line });
      i = j + 1;
    } else if (c === '`') {
      readTemplate(i + 1, line, true);
    } else if (c === '}' && substitutions.length > 0 && substitutions.at(-1) === braces) {
      substitutions.pop();
      readTemplate(i + 1, line, false);
    } else if (/[A-Za-z_$#\u0080-\uFFFF]/.test(c)) {
      let j = i + 1;
      while (j < n && /[\w$\u0080-\uFFFF]/.test(source[j] as string)) j++;
      tokens.push({ kind: 'name', text: source.slice(i, j), line });
      i = j;
    } else if (/\d/.test(c) || (c === '.' && /\d/.test(next ?? ''))) {
      let j = i + 1;
      while (j < n && /[\w.]/.test(source[j] as string)) j++;
      tokens.push({ kind: 'number', text: source.slice(i, j), line });
      i = j;
    } else if (c === '/' && regexMayStart()) {
      // A regular expression ends at an unescaped `/` outside a class, on the same line;
      // reaching the line's end means it was a division after all.
      let j = i + 1;
      let inClass = false;
      while (j < n && source[j] !== '\n' && (inClass || source[j] !== '/')) {
        if (source[j] === '\\') j++;
        else if (source[j] === '[') inClass = true;
        else if (source[j] === ']') inClass = false;
        j++;
      }
      if (j < n && source[j] === '/') {
        j++;
        while (j < n && /[a-z]/i.test(source[j] as string)) j++;
        tokens.push({ kind: 'regex', text: source.slice(i, j), line });
        i = j;
      } else {
        tokens.push({ kind: 'punct', text: '/', line });
        i++;
      }
    } else {
      const three = source.slice(i, i + 3);
      const two = source.slice(i, i + 2);
      const text = three === '...' ? three : two === '=>' || two === '?.' ? two : c;
      if (text === '{') braces++;
      else if (text === '}') braces--;
      tokens.push({ kind: 'punct', text, line });
      i += text.length;
    }
  }
  return tokens;
}

/** A string literal, or a template without substitution. */
export function isStringLiteral(token: Token | undefined): token is Token & { value: string } {
  return token !== undefined && token.value !== undefined && (token.kind === 'string' || token.kind === 'template');
}

/**
 * The index just past the type argument list that opens at `tokens[start]`
 * (a `<`), or `start` when there is none there or it does not close.
 */
export function skipTypeArguments(tokens: readonly Token[], start: number): number {
  if (tokens[start]?.text !== '<') return start;
  let depth = 0;
  for (let j = start; j < tokens.length && j < start + 400; j++) {
    const text = tokens[j]?.text;
    if (text === '<') depth++;
    else if (text === '>') {
      depth--;
      if (depth === 0) return j + 1;
    } else if (text === ';' && tokens[j]?.kind === 'punct' && depth === 0) break;
  }
  return start;
}

export interface ImportRef {
  readonly specifier: string;
  readonly line: number;
  /** `import type …` / `export type … from`, or an `import('…')` type: erased at run time. */
  readonly typeOnly: boolean;
  readonly form: 'import' | 'side-effect' | 'export' | 'dynamic';
}

/**
 * Every module specifier `source` names: `import … from`, `import type … from`,
 * `import '…'`, `export … from`, `export type … from` and `import('…')` with a
 * string literal, over any number of lines.
 */
export function extractImports(source: string): ImportRef[] {
  const t = tokenize(source);
  const found: ImportRef[] = [];
  /** The `from '…'` of a statement at or after `j`, before its end. */
  const fromClause = (j: number): Token | undefined => {
    for (; j < t.length; j++) {
      const tok = t[j] as Token;
      if (tok.kind === 'punct' && tok.text === ';') return undefined;
      const statement = tok.kind === 'name' && (tok.text === 'import' || tok.text === 'export');
      if (statement && t[j - 1]?.text !== '.') return undefined;
      if (tok.kind === 'name' && tok.text === 'from' && isStringLiteral(t[j + 1])) return t[j + 1];
    }
    return undefined;
  };
  for (let k = 0; k < t.length; k++) {
    const tok = t[k] as Token;
    if (tok.kind !== 'name' || (tok.text !== 'import' && tok.text !== 'export')) continue;
    const prev = t[k - 1];
    if (prev?.text === '.' || prev?.text === '?.') continue;
    const next = t[k + 1];
    if (tok.text === 'import') {
      if (next?.text === '(') {
        const arg = t[k + 2];
        if (isStringLiteral(arg) && (t[k + 3]?.text === ')' || t[k + 3]?.text === ',')) {
          found.push({ specifier: arg.value, line: arg.line, typeOnly: prev?.text === 'typeof', form: 'dynamic' });
        }
        continue;
      }
      if (next?.text === '.') continue; // import.meta
      if (isStringLiteral(next)) {
        found.push({ specifier: next.value, line: tok.line, typeOnly: false, form: 'side-effect' });
        continue;
      }
      const after = t[k + 2]?.text;
      const typeOnly = next?.text === 'type' && after !== 'from' && after !== ',' && after !== '=';
      const from = fromClause(k + 1);
      if (from !== undefined) found.push({ specifier: from.value as string, line: tok.line, typeOnly, form: 'import' });
    } else {
      let j = k + 1;
      const typeOnly = t[j]?.text === 'type' && (t[j + 1]?.text === '{' || t[j + 1]?.text === '*');
      if (typeOnly) j++;
      if (t[j]?.text !== '{' && t[j]?.text !== '*') continue; // a declaration, not a re-export
      const from = fromClause(j);
      if (from !== undefined) found.push({ specifier: from.value as string, line: tok.line, typeOnly, form: 'export' });
    }
  }
  return found;
}

/** The file a relative specifier names, trying `.ts` for `.js` and a folder's `index.ts`; or `undefined`. */
export function resolveSpecifier(fromFile: string, specifier: string): string | undefined {
  const base = resolve(dirname(fromFile), specifier);
  const candidates = [base, base.replace(/\.(m?)js$/, '.$1ts'), `${base}.ts`, join(base, 'index.ts')];
  return candidates.find((c) => existsSync(c) && statSync(c).isFile());
}

export function isRelative(specifier: string): boolean {
  return specifier.startsWith('./') || specifier.startsWith('../');
}

export interface ImportEdge {
  /** Paths relative to the root, with `/`. */
  readonly from: string;
  readonly to: string;
  readonly line: number;
  readonly typeOnly: boolean;
  readonly specifier: string;
}

export interface ImportGraph {
  /** Every `.ts` file under the folder, relative to the root, sorted. */
  readonly files: readonly string[];
  /** The relative imports between those files. */
  readonly edges: readonly ImportEdge[];
  /** Relative imports that resolve to no file. */
  readonly unresolved: readonly { readonly file: string; readonly line: number; readonly specifier: string }[];
  /** Relative imports of anything else that exists (JSON, files outside the folder). */
  readonly others: readonly ImportEdge[];
}

const posix = (path: string) => path.split(sep).join('/');

/** The `.ts` files under `dir` (relative to `root`, sorted) and their relative imports. */
export function buildImportGraph(root: string, dir: string): ImportGraph {
  const base = resolve(root, dir);
  const files = (readdirSync(base, { recursive: true }) as string[])
    .filter((f) => f.endsWith('.ts'))
    .map((f) => posix(relative(root, join(base, f))))
    .sort();
  const known = new Set(files);
  const edges: ImportEdge[] = [];
  const unresolved: { file: string; line: number; specifier: string }[] = [];
  const others: ImportEdge[] = [];
  for (const file of files) {
    const absolute = resolve(root, file);
    for (const ref of extractImports(readFileSync(absolute, 'utf8'))) {
      if (!isRelative(ref.specifier)) continue;
      const target = resolveSpecifier(absolute, ref.specifier);
      if (target === undefined) {
        unresolved.push({ file, line: ref.line, specifier: ref.specifier });
        continue;
      }
      const to = posix(relative(root, target));
      const edge = { from: file, to, line: ref.line, typeOnly: ref.typeOnly, specifier: ref.specifier };
      (known.has(edge.to) ? edges : others).push(edge);
    }
  }
  return { files, edges, unresolved, others };
}

export interface Arc {
  readonly from: string;
  readonly to: string;
  readonly typeOnly?: boolean;
}

/** Tarjan's strongly connected components of the graph, each sorted, in the order found. */
export function stronglyConnectedComponents(nodes: readonly string[], arcs: readonly Arc[]): string[][] {
  const successors = successorMap(nodes, arcs);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  let counter = 0;
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of successors.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      components.push(component.sort());
    }
  };
  for (const v of [...successors.keys()].sort()) if (!index.has(v)) visit(v);
  return components;
}

function successorMap(nodes: readonly string[], arcs: readonly Arc[]): Map<string, string[]> {
  const successors = new Map<string, Set<string>>(nodes.map((n) => [n, new Set()]));
  for (const { from, to } of arcs) {
    if (!successors.has(from)) successors.set(from, new Set());
    if (!successors.has(to)) successors.set(to, new Set());
    (successors.get(from) as Set<string>).add(to);
  }
  return new Map([...successors].map(([n, s]) => [n, [...s].sort()]));
}

/**
 * The import cycles: for each strongly connected component of more than one
 * file, or a file importing itself, shortest cycles (as paths that end where
 * they start, from the first file in sort order not yet on a reported cycle)
 * until every file of the component is on one.
 */
export function findCycles(nodes: readonly string[], arcs: readonly Arc[]): string[][] {
  const successors = successorMap(nodes, arcs);
  const cycles: string[][] = [];
  for (const component of stronglyConnectedComponents(nodes, arcs)) {
    const first = component[0] as string;
    if (component.length === 1 && !(successors.get(first) ?? []).includes(first)) continue;
    const members = new Set(component);
    const uncovered = new Set(component);
    for (const start of component) {
      if (!uncovered.has(start)) continue;
      const path = shortestCycle(start, members, successors);
      for (const node of path) uncovered.delete(node);
      cycles.push(path);
    }
  }
  return cycles.sort((a, b) => (a[0] as string).localeCompare(b[0] as string));
}

function shortestCycle(
  start: string,
  members: ReadonlySet<string>,
  successors: ReadonlyMap<string, readonly string[]>,
): string[] {
  const parent = new Map<string, string>();
  const queue = [start];
  for (let q = 0; q < queue.length; q++) {
    const v = queue[q] as string;
    for (const w of successors.get(v) ?? []) {
      if (!members.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let u: string | undefined = v; u !== undefined && u !== start; u = parent.get(u)) path.splice(1, 0, u);
        return [...path, start];
      }
      if (!parent.has(w)) {
        parent.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start, start]; // unreachable within a strongly connected component
}

/** `a.ts → b.ts → a.ts`, naming the type-only steps after it. */
export function formatCycle(cycle: readonly string[], arcs: readonly Arc[]): string {
  const typeOnly: string[] = [];
  for (let i = 0; i + 1 < cycle.length; i++) {
    const steps = arcs.filter((a) => a.from === cycle[i] && a.to === cycle[i + 1]);
    if (steps.length > 0 && steps.every((a) => a.typeOnly === true)) typeOnly.push(`${cycle[i]} → ${cycle[i + 1]}`);
  }
  return cycle.join(' → ') + (typeOnly.length > 0 ? `  (type-only: ${typeOnly.join(', ')})` : '');
}
