#!/usr/bin/env node
// No file under src/ over 250 lines, and no function there over 80 lines of
// its own (make lint; test/project/architecture.test.ts runs it too). A function's
// own lines run from its first line to its last, less the lines of the
// functions written inside it (each of those leaves the one line that names
// it): a closure that returns small named functions is judged by what it
// does itself. Every line counts, blank lines and comments too. Parsed by
// oxc-parser (a devDependency), so arrow functions, methods, getters and
// object-literal functions are all found.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseSync } from 'oxc-parser';

export const MAX_FILE_LINES = 250;
export const MAX_FUNCTION_LINES = 80;

const FUNCTIONS = new Set(['FunctionDeclaration', 'FunctionExpression', 'ArrowFunctionExpression']);

/** What in `text` (TypeScript, named `file`) is over the limits: one line per finding. */
export function findings(file, text) {
  const found = [];
  const lines = text.endsWith('\n') ? text.split('\n').length - 1 : text.split('\n').length;
  if (lines > MAX_FILE_LINES) found.push(`${file}: ${lines} lines (at most ${MAX_FILE_LINES})`);
  const { program, errors } = parseSync(file, text);
  if (errors.length > 0) return [...found, `${file}: does not parse: ${errors[0].message}`];
  const starts = [0];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  const lineOf = (offset) => {
    let low = 0;
    let high = starts.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (starts[middle] <= offset) low = middle;
      else high = middle - 1;
    }
    return low + 1;
  };
  const span = (node) => lineOf(node.end - 1) - lineOf(node.start) + 1;
  // Walks the tree; `owner` is the innermost function around `node`, with its own count so far.
  const walk = (node, owner, name) => {
    if (node === null || typeof node !== 'object') return;
    if (Array.isArray(node)) {
      for (const child of node) walk(child, owner, name);
      return;
    }
    let inner = owner;
    if (FUNCTIONS.has(node.type)) {
      if (owner !== undefined) owner.own -= span(node) - 1;
      inner = { own: span(node), line: lineOf(node.start), name: node.id?.name ?? name ?? '(anonymous)' };
      owners.push(inner);
    }
    for (const [key, child] of Object.entries(node)) {
      if (key === 'parent' || child === null || typeof child !== 'object') continue;
      walk(child, inner, nameOf(node, key) ?? name);
    }
  };
  const owners = [];
  walk(program, undefined, undefined);
  for (const { own, line, name } of owners) {
    if (own > MAX_FUNCTION_LINES) {
      found.push(`${file}:${line}: function ${name} has ${own} lines of its own (at most ${MAX_FUNCTION_LINES})`);
    }
  }
  return found;
}

/** The name a function found under `node[key]` goes by: the variable, property or method it is. */
function nameOf(node, key) {
  if (node.type === 'VariableDeclarator' && key === 'init') return node.id?.name;
  if (
    (node.type === 'Property' || node.type === 'MethodDefinition' || node.type === 'PropertyDefinition') &&
    key === 'value'
  ) {
    return node.key?.name ?? node.key?.value;
  }
  return undefined;
}

/** The TypeScript files git tracks (or would) under src/, but the generated ones (`*.generated.ts`). */
export function sourceFiles() {
  return execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', 'src'], { encoding: 'utf8' })
    .split('\n')
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.generated.ts'));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const files = sourceFiles();
  const found = files.flatMap((file) => {
    try {
      return findings(file, readFileSync(file, 'utf8'));
    } catch (error) {
      if (error.code === 'ENOENT') return []; // deleted in the working tree
      throw error;
    }
  });
  if (found.length > 0) {
    console.error(`${found.length} findings over the size limits:\n${found.join('\n')}`);
    process.exit(1);
  }
  console.log(
    `${files.length} files under src/, none over ${MAX_FILE_LINES} lines, no function over ` +
      `${MAX_FUNCTION_LINES} lines of its own`,
  );
}
