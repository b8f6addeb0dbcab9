/**
 * The `.env` file (contract §1): in the working directory, when present, it supplies the variables the environment
 * does not set. A malformed file is refused whole, with one line naming the file, the line and what is wrong:
 * start-up stops rather than run with half a configuration.
 *
 * One `NAME=value` per line, as a shell would source it. Accepted:
 * - blank lines, and lines whose first non-blank character is `#`; an optional `export ` prefix;
 * - NAME: a letter or `_`, then letters, digits and `_`; blanks around `=`;
 * - an unquoted value, trimmed, where a `#` after a blank starts a comment (`A=x # note` is `x`; `A=x#1` is `x#1`);
 * - a single-quoted value, literal; a double-quoted one, with the escapes `\n`, `\"` and `\\` (any other
 *   backslash kept, as the shell does); a comment after the closing quote; an empty value (`A=`);
 * - CRLF line endings and a leading byte-order mark.
 * Refused: a line without `=`, an invalid name, a quote not closed on its line, text after a closing quote, a name
 * defined twice.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** What the file is called in the working directory, and in messages. */
export const ENV_FILE = '.env';

/** A malformed or unreadable `.env`; the message is one line naming the file. */
export class EnvFileError extends Error {
  override name = 'EnvFileError';
}

type Env = Readonly<Record<string, string | undefined>>;

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
// Only before a name: `export=1` and `export =1` assign the variable "export".
const EXPORT_PREFIX = /^export\s+(?=[A-Za-z_])/;
const LINE_BREAK = /\r?\n/;
const UNQUOTED_COMMENT = /\s#/;
const ESCAPES: Readonly<Record<string, string>> = { n: '\n', '"': '"', '\\': '\\' };

/**
 * The variables of a `.env` file's text, in file order (with `lineOf`, the line of each); at the first mistake an
 * EnvFileError naming `fileName` and the line.
 */
export function parseEnvFile(text: string, fileName: string, lineOf?: Map<string, number>): Map<string, string> {
  const values = new Map<string, string>();
  const definedOn = new Map<string, number>();
  const lines = text.replace(/^\uFEFF/, '').split(LINE_BREAK);
  for (const [index, raw] of lines.entries()) {
    const lineNumber = index + 1;
    const fail = (what: string): never => {
      throw new EnvFileError(`${fileName} line ${lineNumber}: ${what}`);
    };
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const assignment = line.replace(EXPORT_PREFIX, '');
    const equals = assignment.indexOf('=');
    // Never a value, nor what may be one: a mistyped line's rest may hold a secret, even before an "=" (that of
    // `DATABASE_URL postgres://u:password@db/orders?sslmode=require`). Only a first word that is a name is named.
    const first = assignment.split(/\s/, 1)[0] as string;
    const named = NAME.test(first) ? ` after ${first}` : '';
    if (equals === -1) fail(`expected NAME=value, got a line without "="${named}`);
    const name = assignment.slice(0, equals).trim();
    if (/\s/.test(name)) fail(`expected NAME=value, got a blank instead of "="${named}`);
    if (!NAME.test(name))
      fail(
        `${name.length > 40 ? 'the text before "="' : JSON.stringify(name)} is not a variable name ` +
          '(letters, digits and _, not starting with a digit)',
      );
    const earlier = definedOn.get(name);
    if (earlier !== undefined) fail(`${name} is defined twice (first on line ${earlier})`);
    values.set(name, parseValue(assignment.slice(equals + 1), name, fail));
    definedOn.set(name, lineNumber);
  }
  for (const [name, line] of definedOn) lineOf?.set(name, line);
  return values;
}

/**
 * `env` with the variables of `<cwd>/.env` it does not set (set to the empty string counts as set). With `lineOf`,
 * each name the file defines is put there with its line (for `unknownSettings()`).
 */
export function loadEnvFile(env: Env, cwd: string, lineOf?: Map<string, number>): Record<string, string | undefined> {
  let text: string;
  try {
    text = readFileSync(join(cwd, ENV_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { ...env };
    throw new EnvFileError(`${ENV_FILE}: cannot be read (${(error as Error).message})`);
  }
  const merged: Record<string, string | undefined> = { ...env };
  for (const [name, value] of parseEnvFile(text, ENV_FILE, lineOf)) {
    if (merged[name] === undefined) merged[name] = value;
  }
  return merged;
}

/** The value after `=`: quoted or not, comment removed. */
function parseValue(text: string, name: string, fail: (what: string) => never): string {
  const start = text.trimStart();
  const quote = start[0];
  if (quote !== "'" && quote !== '"') {
    const comment = text.search(UNQUOTED_COMMENT);
    return (comment === -1 ? text : text.slice(0, comment)).trim();
  }
  let value = '';
  let i = 1;
  for (; i < start.length && start[i] !== quote; i++) {
    const c = start[i] as string;
    if (quote === '"' && c === '\\' && i + 1 < start.length) {
      const next = start[++i] as string;
      value += ESCAPES[next] ?? `\\${next}`;
    } else {
      value += c;
    }
  }
  const kind = quote === '"' ? 'double' : 'single';
  if (i >= start.length) fail(`the ${kind} quote of ${name}'s value is not closed on its line`);
  const rest = start.slice(i + 1).trim();
  if (rest !== '' && !rest.startsWith('#')) fail(`unexpected text after the closing ${kind} quote of ${name}'s value`);
  return value;
}
