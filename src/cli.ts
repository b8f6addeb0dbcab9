/**
 * The command-line tool for operators (contract §1), against the same database
 * as the server: `DATABASE_URL`, or the embedded one in `DATA_DIR`. Results
 * on stdout, errors on stderr with a non-zero exit status: 1 when a command
 * fails, 2 for a mistake in the command line or in `.env`. Help and the
 * version go to stdout with status 0, without configuration or database.
 *
 * The commands are one table, COMMANDS: the general usage, each command's
 * help, the suggestions for a mistyped command or option and the dispatch
 * are all read from it.
 */
import { parseArgs } from 'node:util';
import * as v from 'valibot';
import { createToken, listTokens, revokeToken } from './auth/token-store.ts';
import { parseScopes, parseTtl, SCOPES } from './auth/tokens.ts';
import { ConfigError, loadConfig } from './config/config.ts';
import { openDatabase, type Database } from './db/database.ts';
import { EmbeddedDatabaseError, poolerHint } from './db/errors.ts';
import { migrate, MigrationError } from './db/migrate.ts';
import { seed } from './service/seed.ts';
import { EnvFileError, loadEnvFile } from './config/env-file.ts';
import { createUser, NewUserSchema, UserExistsError } from './users/user-store.ts';
import { userRepresentation } from './users/representation.ts';
import { VERSION } from './base/version.ts';
import { positiveInteger } from './http/list-query.ts';

/** An option of a command; every option takes a value: `--user 3` or `--user=3`. */
interface OptionSpec {
  readonly name: string;
  /** Its value in the synopsis: `ID`, `a,b,c`, `customer|admin`. */
  readonly value: string;
  readonly required: boolean;
  readonly description: string;
}

type Values = Readonly<Record<string, string | undefined>>;
/** What a command does once the database is open and migrated. */
type Run = (db: Database, io: Io, applied: readonly string[]) => Promise<void>;

interface CommandSpec {
  /** `['migrate']`, `['token', 'create']`: a two-word command belongs to the group of its first word. */
  readonly words: readonly [string] | readonly [string, string];
  /** One line, lower case: what it does and what it prints. */
  readonly summary: string;
  readonly options: readonly OptionSpec[];
  readonly example: string;
  /** Checks the option values (a UsageError for a mistake), before anything is opened. */
  build(values: Values): Run;
}

const COMMANDS: readonly CommandSpec[] = [
  {
    words: ['migrate'],
    summary: 'apply pending migrations; prints their names',
    options: [],
    example: 'orders migrate',
    build: () => async (_db, io, applied) => {
      for (const name of applied) io.out(`${name}\n`);
    },
  },
  {
    words: ['seed'],
    summary: 'load the demo catalog and users (idempotent); prints them as JSON',
    options: [],
    example: 'orders seed',
    build: () => async (db, io) => {
      await seed(db);
      const users = await db.many<Parameters<typeof userRepresentation>[0]>('ListDemoUsers');
      const [products] = await db.composed<{ total_count: number }>('CountProducts', { where: 'TRUE' });
      io.out(`${JSON.stringify({ users: users.map(userRepresentation), products: products?.total_count ?? 0 })}\n`);
    },
  },
  {
    words: ['user', 'create'],
    summary: 'create a user; prints it as JSON',
    options: [
      { name: 'email', value: 'E', required: true, description: 'the e-mail address, unique whatever its case' },
      { name: 'name', value: 'N', required: true, description: 'the name shown for the user, 1 to 200 characters' },
      { name: 'role', value: 'customer|admin', required: false, description: 'customer (the default) or admin' },
    ],
    example: 'orders user create --email ops@example.com --name Ops --role admin',
    build(values) {
      const parsed = v.safeParse(NewUserSchema, {
        email: values.email,
        name: values.name,
        ...(values.role === undefined ? {} : { role: values.role }),
      });
      if (!parsed.success) {
        throw new UsageError(parsed.issues.map((i) => `--${v.getDotPath(i) ?? 'input'} ${i.message}`).join('; '));
      }
      return async (db, io) => {
        io.out(`${JSON.stringify(userRepresentation(await createUser(db, parsed.output)))}\n`);
      };
    },
  },
  {
    words: ['token', 'create'],
    summary: 'print a new token, alone on one line (shown once)',
    options: [
      { name: 'user', value: 'ID', required: true, description: 'the id of the user the token acts for' },
      {
        name: 'scopes',
        value: 'a,b,c',
        required: true,
        description: 'what the token may do, comma-separated (see Scopes in orders --help)',
      },
      {
        name: 'ttl',
        value: '30d',
        required: false,
        description: 'how long it is valid: a number and a unit (s, m, h, d); without it, it does not expire',
      },
    ],
    example: 'orders token create --user 3 --scopes orders:read,orders:write --ttl 30d',
    build(values) {
      const userId = id(values.user as string, '--user');
      const { scopes, unknown } = parseScopes(values.scopes as string);
      if (unknown.length > 0) throw new UsageError(`unknown scopes ${unknown.join(', ')}`);
      if (scopes.length === 0) throw new UsageError('--scopes needs at least one scope');
      let ttl: number | null = null;
      if (values.ttl !== undefined) {
        ttl = parseTtl(values.ttl) ?? null;
        if (ttl === null)
          throw new UsageError(`--ttl must be a number and a unit (s, m, h, d), such as 30d; got ${values.ttl}`);
      }
      return async (db, io) => {
        if ((await db.one('GetUser', [userId])) === undefined) throw new CommandError(`there is no user ${userId}`);
        io.out(`${(await createToken(db, userId, scopes, ttl)).token}\n`);
      };
    },
  },
  {
    words: ['token', 'list'],
    summary: "print the user's tokens as JSON (never the secret)",
    options: [{ name: 'user', value: 'ID', required: true, description: 'the id of the user' }],
    example: 'orders token list --user 3',
    build(values) {
      const userId = id(values.user as string, '--user');
      return async (db, io) => {
        if ((await db.one('GetUser', [userId])) === undefined) throw new CommandError(`there is no user ${userId}`);
        io.out(`${JSON.stringify(await listTokens(db, userId))}\n`);
      };
    },
  },
  {
    words: ['token', 'revoke'],
    summary: 'revoke a token; prints nothing',
    options: [
      { name: 'id', value: 'TOKEN_ID', required: true, description: 'the id of the token, as token list prints it' },
    ],
    example: 'orders token revoke --id 12',
    build(values) {
      const tokenId = id(values.id as string, '--id');
      return async (db) => {
        if (!(await revokeToken(db, tokenId))) throw new CommandError(`there is no token ${tokenId}`);
      };
    },
  },
  {
    words: ['idempotency', 'purge'],
    summary: 'delete idempotency keys older than 24 hours; prints how many',
    options: [],
    example: 'orders idempotency purge',
    build: () => async (db, io) => {
      io.out(`${await db.exec('PurgeIdempotencyKeys')}\n`);
    },
  },
];

const HELP = ['--help', '-h', 'help'];
const VERSION_FLAGS = ['--version', '-v', 'version'];
const HELP_OPTIONS = ['--help', '-h'];
/** The first words of the two-word commands, in table order: `user`, `token`, `idempotency`. */
const GROUPS = [...new Set(COMMANDS.filter((c) => c.words.length === 2).map((c) => c.words[0]))];

/** The general usage: `orders --help` on stdout, and on stderr after a mistake. */
export const USAGE = `usage: orders <command> [options]
       orders help [<command>]     this text, or a command's options and an example
       orders <command> --help     the same as orders help <command>
       orders --version            the version

Commands:
${commandRows(COMMANDS)}

The database is DATABASE_URL, or the embedded one in DATA_DIR (default ./data).
A .env file in the working directory supplies variables the environment does not set.
Scopes: ${SCOPES.join(', ')}. TTL units: s, m, h, d.
Exit status: 0 done, 1 the command failed, 2 a mistake in the command line or in .env.`;

export interface Io {
  out(text: string): void;
  err(text: string): void;
}

const stdio: Io = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) };

/**
 * Runs one command line; returns the exit status. `env` is the whole
 * environment; with `envDir`, the `.env` file in that folder supplies what
 * `env` does not set (read only when a command is to run, not for help).
 */
export async function runCli(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>> = process.env,
  io: Io = stdio,
  envDir?: string,
): Promise<number> {
  let db: Database | undefined;
  try {
    const action = parseCommandLine(argv);
    if (typeof action === 'string') {
      io.out(action);
      return 0;
    }
    const config = loadConfig(envDir === undefined ? env : loadEnvFile(env, envDir));
    db = await openDatabase({
      databaseUrl: config.databaseUrl,
      dataDir: config.dataDir,
      poolMax: 2,
      prepare: config.dbPrepare,
    });
    const applied = await migrate(db);
    await action(db, io, applied);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`orders: ${error.message}\n\n${USAGE}\n`);
      return 2;
    }
    if (error instanceof EnvFileError) {
      io.err(`orders: ${error.message}\n`);
      return 2;
    }
    if (
      error instanceof ConfigError ||
      error instanceof MigrationError ||
      error instanceof EmbeddedDatabaseError ||
      error instanceof UserExistsError ||
      error instanceof CommandError
    ) {
      io.err(`orders: ${error.message}\n`);
      return 1;
    }
    io.err(`orders: ${(error as Error).message ?? String(error)}\n`);
    const hint = poolerHint(error);
    if (hint !== undefined) io.err(`orders: ${hint}\n`);
    return 1;
  } finally {
    await db?.close();
  }
}

/**
 * The tool as its own process runs it (bin/orders.js, the built program):
 * this process's environment, over the working directory's `.env`.
 */
export function runCliProcess(argv: readonly string[]): Promise<number> {
  return runCli(argv, process.env, stdio, process.cwd());
}

/** A mistake in the command line: printed with the usage, exit status 2. */
class UsageError extends Error {
  override name = 'UsageError';
}

/** A command that ran and failed for a reason the operator can act on. */
class CommandError extends Error {
  override name = 'CommandError';
}

/** The text to print for help or the version, or the command to run. */
function parseCommandLine(argv: readonly string[]): string | Run {
  const [first, ...rest] = argv;
  if (first === undefined) throw new UsageError('no command given');
  if (HELP.includes(first)) return helpFor(rest);
  if (VERSION_FLAGS.includes(first)) {
    if (rest.length > 0) throw new UsageError(`${first} takes no arguments, got ${JSON.stringify(rest.join(' '))}`);
    return `${VERSION}\n`;
  }
  const command = COMMANDS.find((c) => c.words.every((word, i) => argv[i] === word));
  if (command !== undefined) {
    const args = argv.slice(command.words.length);
    if (args.some((a) => HELP_OPTIONS.includes(a))) return commandHelp(command);
    return command.build(optionValues(command, args));
  }
  if (GROUPS.includes(first)) {
    const [second] = rest;
    if (second !== undefined && !second.startsWith('-')) throw unknownCommand([first, second]);
    if (rest.some((a) => HELP_OPTIONS.includes(a))) return groupHelp(first);
    throw new UsageError(
      `${JSON.stringify(first)} needs a command: ` +
        `${alternatives(groupCommands(first).map((c) => c.words[1] as string))}`,
    );
  }
  if (first.startsWith('-')) {
    throw new UsageError(`unknown option ${JSON.stringify(first)}${didYouMean(first, ['--help', '--version'])}`);
  }
  const words = argv.slice(0, 2);
  const positional = words[1]?.startsWith('-') ? words.slice(0, 1) : words;
  throw unknownCommand(positional);
}

/** `help`, `help <command>`, `help <group>`: exactly one of them, or a mistake. */
function helpFor(topic: readonly string[]): string {
  if (topic.length === 0 || (topic.length === 1 && HELP.includes(topic[0] as string))) return `${USAGE}\n`;
  const command = COMMANDS.find(
    (c) => c.words.length === topic.length && c.words.every((word, i) => topic[i] === word),
  );
  if (command !== undefined) return commandHelp(command);
  if (topic.length === 1 && GROUPS.includes(topic[0] as string)) return groupHelp(topic[0] as string);
  throw unknownCommand(topic);
}

function unknownCommand(words: readonly string[]): UsageError {
  const typed = words.join(' ');
  // A candidate is compared with as many typed words as it has: "sed now" is close to "seed".
  const candidates = [...COMMANDS.map((c) => c.words.join(' ')), ...(words.length === 1 ? GROUPS : [])];
  const suggestion = nearest(candidates, (candidate) => words.slice(0, candidate.split(' ').length).join(' '));
  return new UsageError(
    'unknown command ' +
      `${JSON.stringify(typed)}${suggestion === undefined ? '' : `; did you mean ${JSON.stringify(suggestion)}?`}`,
  );
}

/** The values of `--name value` and `--name=value`; a UsageError for anything else. */
function optionValues(command: CommandSpec, args: readonly string[]): Values {
  const known = command.options.map((o) => o.name);
  // Not strict: the unknown option is reported here, with a suggestion.
  const { tokens } = parseArgs({
    args: [...args],
    options: Object.fromEntries(known.map((name) => [name, { type: 'string' as const }])),
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const values: Record<string, string | undefined> = {};
  const name = JSON.stringify(command.words.join(' '));
  for (const token of tokens) {
    if (token.kind === 'positional')
      throw new UsageError(`unexpected argument ${JSON.stringify(token.value)} for ${name}`);
    if (token.kind !== 'option') continue;
    if (!known.includes(token.name)) {
      const options = known.map((o) => `--${o}`);
      throw new UsageError(
        `unknown option ${JSON.stringify(token.rawName)} for ${name}${didYouMean(`--${token.name}`, options)}`,
      );
    }
    if (token.value === undefined) throw new UsageError(`--${token.name} needs a value`);
    values[token.name] = token.value;
  }
  for (const option of command.options) {
    if (option.required && (values[option.name] === undefined || values[option.name] === ''))
      throw new UsageError(`--${option.name} is required`);
  }
  return values;
}

function id(value: string, option: string): number {
  const n = positiveInteger(value);
  if (n === undefined) throw new UsageError(`${option} must be a positive integer, got ${JSON.stringify(value)}`);
  return n;
}

// The help texts.

function synopsis(command: CommandSpec): string {
  const options = command.options.map((o) => (o.required ? `--${o.name} ${o.value}` : `[--${o.name} ${o.value}]`));
  return [...command.words, ...options].join(' ');
}

/** One line per command: its synopsis, then its summary in a column. */
function commandRows(commands: readonly CommandSpec[]): string {
  const width = Math.max(...commands.map((c) => synopsis(c).length));
  return commands.map((c) => `  ${synopsis(c).padEnd(width)}   ${c.summary}`).join('\n');
}

function commandHelp(command: CommandSpec): string {
  const flags = command.options.map((o) => `--${o.name} ${o.value}`);
  const width = Math.max(0, ...flags.map((f) => f.length));
  const options = command.options.map(
    (o, i) => `  ${(flags[i] as string).padEnd(width)}   ${o.required ? 'required' : 'optional'}   ${o.description}`,
  );
  return `usage: orders ${synopsis(command)}

${sentence(command.summary)}

${options.length === 0 ? 'Options: none.' : `Options:\n${options.join('\n')}`}

Example:
  ${command.example}
`;
}

function groupHelp(group: string): string {
  return `usage: orders ${group} <command> [options]

Commands:
${commandRows(groupCommands(group))}

"orders help ${group} <command>" shows a command's options and an example.
`;
}

function groupCommands(group: string): CommandSpec[] {
  return COMMANDS.filter((c) => c.words.length === 2 && c.words[0] === group);
}

function sentence(text: string): string {
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}.`;
}

/** `a`, `a or b`, `a, b or c`. */
function alternatives(words: readonly string[]): string {
  return words.length <= 1 ? words.join('') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;
}

// Suggestions for a mistyped command or option.

function didYouMean(typed: string, candidates: readonly string[]): string {
  const suggestion = nearest(candidates, () => typed);
  return suggestion === undefined ? '' : `; did you mean ${JSON.stringify(suggestion)}?`;
}

/**
 * The candidate nearest to what was typed (`typedFor(candidate)`), when it
 * is close: at most one edit for a short word, a third of its length for a
 * longer one. Ties go to the first candidate.
 */
function nearest(candidates: readonly string[], typedFor: (candidate: string) => string): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const distance = editDistance(typedFor(candidate), candidate);
    if (distance <= Math.max(1, Math.floor(candidate.length / 3)) && distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours cost 1. */
function editDistance(a: string, b: string): number {
  // d[i][j]: the distance between the first i characters of a and the first j of b.
  const d = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = d[i] as number[];
      const previous = d[i - 1] as number[];
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min((previous[j] as number) + 1, (row[j - 1] as number) + 1, (previous[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        row[j] = Math.min(row[j] as number, ((d[i - 2] as number[])[j - 2] as number) + 1);
      }
    }
  }
  return (d[a.length] as number[])[b.length] as number;
}
