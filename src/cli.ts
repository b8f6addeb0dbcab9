/**
 * The command-line tool for operators (SPEC §1), against the same database
 * as the server: `DATABASE_URL`, or the embedded one in `DATA_DIR`. Results
 * on stdout, errors on stderr with a non-zero exit status.
 */
import { parseArgs } from 'node:util';
import * as v from 'valibot';
import { createToken, listTokens, revokeToken } from './auth/token-store.ts';
import { parseScopes, parseTtl, SCOPES } from './auth/tokens.ts';
import { ConfigError, loadConfig } from './config.ts';
import { openDatabase, type Database } from './db/database.ts';
import { EmbeddedDatabaseError } from './db/errors.ts';
import { migrate, MigrationError } from './db/migrate.ts';
import { seed } from './db/seed.ts';
import { createUser, NewUserSchema, UserExistsError } from './users/user-store.ts';
import { userRepresentation } from './users/users.ts';

export const USAGE = `usage: orders <command> [options]

  migrate                                             apply pending migrations
  seed                                                load the demo catalog and users (idempotent)
  user create --email E --name N [--role customer|admin]
  token create --user ID --scopes a,b,c [--ttl 30d]   print a new token (shown once)
  token list --user ID                                the user's tokens (never the secret)
  token revoke --id TOKEN_ID
  idempotency purge                                   delete idempotency keys older than 24 hours

The database is DATABASE_URL, or the embedded one in DATA_DIR (default ./data).
Scopes: ${SCOPES.join(', ')}. TTL units: s, m, h, d.`;

/** A mistake in the command line: printed with the usage, exit status 2. */
class UsageError extends Error {
  override name = 'UsageError';
}

export interface Io {
  out(text: string): void;
  err(text: string): void;
}

const stdio: Io = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) };

/** Runs one command; returns the exit status. */
export async function runCli(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = process.env, io: Io = stdio): Promise<number> {
  let db: Database | undefined;
  try {
    const command = commandOf(argv);
    const config = loadConfig(env);
    db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolMax: 2 });
    const applied = await migrate(db);
    await command(db, io, applied);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`orders: ${error.message}\n\n${USAGE}\n`);
      return 2;
    }
    if (error instanceof ConfigError || error instanceof MigrationError || error instanceof EmbeddedDatabaseError || error instanceof UserExistsError || error instanceof CommandError) {
      io.err(`orders: ${error.message}\n`);
      return 1;
    }
    io.err(`orders: ${(error as Error).message ?? String(error)}\n`);
    return 1;
  } finally {
    await db?.close();
  }
}

/** A command that ran and failed for a reason the operator can act on. */
class CommandError extends Error {
  override name = 'CommandError';
}

type Command = (db: Database, io: Io, applied: readonly string[]) => Promise<void>;

function commandOf(argv: readonly string[]): Command {
  const [first, second, ...rest] = argv;
  const words = `${first ?? ''} ${second ?? ''}`.trim();
  switch (first) {
    case 'migrate':
      options([second, ...rest].filter((a) => a !== undefined), {});
      return async (_db, io, applied) => {
        for (const name of applied) io.out(`${name}\n`);
      };
    case 'seed':
      options([second, ...rest].filter((a) => a !== undefined), {});
      return async (db, io) => {
        await seed(db);
        const users = await db.many<Parameters<typeof userRepresentation>[0]>('ListDemoUsers');
        const [products] = await db.composed<{ total_count: number }>('CountProducts', { where: 'TRUE' });
        io.out(`${JSON.stringify({ users: users.map(userRepresentation), products: products?.total_count ?? 0 })}\n`);
      };
  }
  switch (words) {
    case 'user create': {
      const values = options(rest, { email: true, name: true, role: false });
      const parsed = v.safeParse(NewUserSchema, { email: values.email, name: values.name, ...(values.role === undefined ? {} : { role: values.role }) });
      if (!parsed.success) {
        throw new UsageError(parsed.issues.map((i) => `--${v.getDotPath(i) ?? 'input'} ${i.message}`).join('; '));
      }
      return async (db, io) => {
        io.out(`${JSON.stringify(userRepresentation(await createUser(db, parsed.output)))}\n`);
      };
    }
    case 'token create': {
      const values = options(rest, { user: true, scopes: true, ttl: false });
      const userId = id(values.user as string, '--user');
      const { scopes, unknown } = parseScopes(values.scopes as string);
      if (unknown.length > 0) throw new UsageError(`unknown scopes ${unknown.join(', ')}`);
      if (scopes.length === 0) throw new UsageError('--scopes needs at least one scope');
      let ttl: number | null = null;
      if (values.ttl !== undefined) {
        ttl = parseTtl(values.ttl) ?? null;
        if (ttl === null) throw new UsageError(`--ttl must be a number and a unit (s, m, h, d), such as 30d; got ${values.ttl}`);
      }
      return async (db, io) => {
        if ((await db.one('GetUser', [userId])) === undefined) throw new CommandError(`there is no user ${userId}`);
        io.out(`${(await createToken(db, userId, scopes, ttl)).token}\n`);
      };
    }
    case 'token list': {
      const userId = id(options(rest, { user: true }).user as string, '--user');
      return async (db, io) => {
        if ((await db.one('GetUser', [userId])) === undefined) throw new CommandError(`there is no user ${userId}`);
        io.out(`${JSON.stringify(await listTokens(db, userId))}\n`);
      };
    }
    case 'idempotency purge': {
      options(rest, {});
      return async (db, io) => {
        io.out(`${await db.exec('PurgeIdempotencyKeys')}\n`);
      };
    }
    case 'token revoke': {
      const tokenId = id(options(rest, { id: true }).id as string, '--id');
      return async (db) => {
        if (!(await revokeToken(db, tokenId))) throw new CommandError(`there is no token ${tokenId}`);
      };
    }
  }
  throw new UsageError(first === undefined ? 'no command given' : `unknown command ${JSON.stringify(words)}`);
}

/** Parses `--name value` options; `spec` says which exist and which are required. */
function options(args: readonly string[], spec: Readonly<Record<string, boolean>>): Record<string, string | undefined> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...args],
      options: Object.fromEntries(Object.keys(spec).map((name) => [name, { type: 'string' as const }])),
      strict: true,
      allowPositionals: false,
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const values = parsed.values as Record<string, string | undefined>;
  for (const [name, required] of Object.entries(spec)) {
    if (required && (values[name] === undefined || values[name] === '')) throw new UsageError(`--${name} is required`);
  }
  return values;
}

function id(value: string, option: string): number {
  if (!/^[1-9][0-9]{0,15}$/.test(value) || Number(value) > Number.MAX_SAFE_INTEGER) {
    throw new UsageError(`${option} must be a positive integer, got ${JSON.stringify(value)}`);
  }
  return Number(value);
}
