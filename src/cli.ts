/**
 * The command-line tool for operators (contract §1), against the same database
 * as the server: `DATABASE_URL`, or the embedded one in `DATA_DIR`. Results
 * on stdout, errors on stderr with a non-zero exit status: 1 when a command
 * fails, 2 for a mistake in the command line or in `.env`. Help and the
 * version go to stdout with status 0, without configuration or database.
 *
 * The commands are one table, COMMANDS (src/cli/commands.ts): the general
 * usage, each command's help (src/cli/help.ts), the suggestions for a
 * mistyped command or option and the dispatch (src/cli/command-line.ts) are
 * all read from it.
 */
import { loadConfig } from './config/config.ts';
import { ConfigError } from './config/values.ts';
import { openDatabase, type Database } from './db/database.ts';
import { EmbeddedDatabaseError, poolerHint } from './db/errors.ts';
import { startupFix } from './db/hints.ts';
import { migrate, MigrationError } from './db/migrate.ts';
import { EnvFileError } from './config/env-file.ts';
import { DRIVER_SETTINGS, loadEnvSettings } from './config/settings.ts';
import { DatabaseWaitError, waitForDatabase } from './db/wait.ts';
import { firstPeer } from './db/peer.ts';
import { UserExistsError } from './users/store.ts';
import { CommandError, UsageError, type Io } from './cli/commands.ts';
import { parseCommandLine } from './cli/command-line.ts';
import { USAGE } from './cli/help.ts';

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
    let settings = env;
    if (envDir !== undefined) {
      const loaded = loadEnvSettings(env, envDir);
      for (const line of loaded.unknown) io.err(`orders: warning: ${line}\n`);
      settings = loaded.env;
      // The driver reads its PG… variables from the process's environment only, as the server's are.
      for (const name of DRIVER_SETTINGS)
        if (process.env[name] === undefined && settings[name] !== undefined) process.env[name] = settings[name];
    }
    const config = loadConfig(settings);
    db = await openDatabase({
      databaseUrl: config.databaseUrl,
      dataDir: config.dataDir,
      poolMax: 2,
      prepare: config.dbPrepare,
    });
    const peer = firstPeer(config.databaseUrl);
    await waitForDatabase(db, {
      waitMs: config.databaseWaitMs,
      ...(peer === undefined ? {} : { peer }),
      onAttempt: ({ attempt, reason, nextInMs }) =>
        io.err(`orders: the database does not answer (attempt ${attempt}: ${reason}); next in ${nextInMs} ms\n`),
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
      error instanceof DatabaseWaitError ||
      error instanceof MigrationError ||
      error instanceof EmbeddedDatabaseError ||
      error instanceof UserExistsError ||
      error instanceof CommandError
    ) {
      io.err(`orders: ${error.message}\n`);
      return 1;
    }
    const fix = startupFix(error);
    io.err(`orders: ${(error as Error).message ?? String(error)}${fix === undefined ? '' : `; ${fix}`}\n`);
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
