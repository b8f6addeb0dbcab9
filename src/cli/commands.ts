/**
 * The commands of the tool, as one table: COMMANDS. The general usage, each
 * command's help, the suggestions for a mistyped command or option and the
 * dispatch are all read from it (src/cli/help.ts, src/cli/command-line.ts).
 * A command checks its options when it is built, before anything is opened,
 * and runs once the database is open and migrated.
 */
import * as v from 'valibot';
import { createToken, listTokens, revokeToken } from '../auth/token-store.ts';
import { parseScopes, parseTtl } from '../auth/tokens.ts';
import type { Database } from '../db/database.ts';
import { cursorKeys, rotateCursorKey } from '../db/keys.ts';
import { seed } from '../service/seed.ts';
import { NewUserSchema } from '../users/rules.ts';
import { createUser } from '../users/store.ts';
import { userRepresentation } from '../users/representation.ts';
import { positiveInteger } from '../http/list-query.ts';

/** An option of a command; every option takes a value: `--user 3` or `--user=3`. */
export interface OptionSpec {
  readonly name: string;
  /** Its value in the synopsis: `ID`, `a,b,c`, `customer|admin`. */
  readonly value: string;
  readonly required: boolean;
  readonly description: string;
}

export type Values = Readonly<Record<string, string | undefined>>;
/** What a command does once the database is open and migrated. */
export type Run = (db: Database, io: Io, applied: readonly string[]) => Promise<void>;

/** Where a command writes: stdout and stderr, or a test's buffers. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
}

export interface CommandSpec {
  /** `['migrate']`, `['token', 'create']`: a two-word command belongs to the group of its first word. */
  readonly words: readonly [string] | readonly [string, string];
  /** One line, lower case: what it does and what it prints. */
  readonly summary: string;
  readonly options: readonly OptionSpec[];
  readonly example: string;
  /** Checks the option values (a UsageError for a mistake), before anything is opened. */
  build(values: Values): Run;
}

export const COMMANDS: readonly CommandSpec[] = [
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
      const users = await db.many('ListDemoUsers');
      const [products] = await db.composed('CountProducts', { where: 'TRUE' });
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
        if ((await db.opt('GetUser', [userId])) === undefined) throw new CommandError(`there is no user ${userId}`);
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
        if ((await db.opt('GetUser', [userId])) === undefined) throw new CommandError(`there is no user ${userId}`);
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
  {
    words: ['keys', 'rotate'],
    summary: 'seal cursors under a new key, the old one still opening those given out; prints what it did',
    options: [],
    example: 'orders keys rotate',
    build: () => async (db, io) => {
      (await cursorKeys(db)).stop();
      if (!(await rotateCursorKey(db)))
        throw new CommandError('no cursor key was rotated: none yet, or another rotation ran at once; run it again');
      io.out('rotated the cursor key: every process seals with the new one within a minute\n');
    },
  },
];

/** The first words of the two-word commands, in table order: `user`, `token`, `idempotency`, `keys`. */
export const GROUPS = [...new Set(COMMANDS.filter((c) => c.words.length === 2).map((c) => c.words[0]))];

/** The commands of `group`, in table order. */
export function groupCommands(group: string): CommandSpec[] {
  return COMMANDS.filter((c) => c.words.length === 2 && c.words[0] === group);
}

/** A mistake in the command line: printed with the usage, exit status 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** A command that ran and failed for a reason the operator can act on. */
export class CommandError extends Error {
  override name = 'CommandError';
}

/** The positive integer an id option holds; a UsageError naming `option` for anything else. */
function id(value: string, option: string): number {
  const n = positiveInteger(value);
  if (n === undefined) throw new UsageError(`${option} must be a positive integer, got ${JSON.stringify(value)}`);
  return n;
}
