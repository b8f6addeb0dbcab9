#!/usr/bin/env node
// No line over 120 characters in the files git tracks (make lint). Biome's
// formatter wraps code at 120 but leaves strings and comments alone; this
// catches those too. Not checked: generated files (package-lock.json, the
// Swagger UI file list), migrations, which never change once applied
// (sql/migrations/: a changed file would no longer be the one a database ran),
// and Markdown, whose tables, query plans and one-line commands (the README's
// walkthrough runs each as written) are not code.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const MAX = 120;
const SKIP = [/(^|\/)package-lock\.json$/, /^src\/pages\/swagger-ui-files\.json$/, /^sql\/migrations\//];
const TEXT = /\.(ts|mjs|js|json|jsonc|sql|conf|template|yml|yaml|sh)$|^(Makefile|\.ci\/run|\.gitignore)$/;

const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { encoding: 'utf8' })
  .split('\n')
  .filter((file) => file !== '' && TEXT.test(file) && !SKIP.some((skip) => skip.test(file)));
const long = [];
for (const file of files) {
  let text;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    continue; // deleted in the working tree
  }
  text.split('\n').forEach((line, index) => {
    // Characters, not UTF-16 units: "§" and "→" count once.
    const length = [...line].length;
    if (length > MAX) long.push(`${file}:${index + 1}: ${length} characters`);
  });
}
if (long.length > 0) {
  console.error(`${long.length} lines over ${MAX} characters:\n${long.join('\n')}`);
  process.exit(1);
}
console.log(`${files.length} files, no line over ${MAX} characters`);
