/**
 * The names of the service's settings (contract §1), so that a `.env` line
 * whose name the service does not know is said, not silently ignored: a
 * misspelt `DATABSE_URL` would otherwise start a fresh embedded database.
 */
import { nearest } from '../base/suggestions.ts';
import { ENV_FILE, EnvFileError, loadEnvFile } from './env-file.ts';

/** Every variable the service reads (`loadConfig()`, and `ENV_STRICT` itself); a test checks the list. */
export const SETTINGS: readonly string[] = [
  'PORT',
  'HOST',
  'DATABASE_URL',
  'DATABASE_READ_URL',
  'DATABASE_WAIT',
  'DATA_DIR',
  'DB_POOL_MAX',
  'DB_PREPARE',
  'MAX_BODY_BYTES',
  'BODY_BUDGET_BYTES',
  'MAX_CONNECTIONS',
  'MAX_CONNECTIONS_PER_ADDRESS',
  'RATE_LIMIT',
  'CACHE_MAX_AGE',
  'V1_DEPRECATED_AT',
  'V1_SUNSET_AT',
  'LOG_LEVEL',
  'WORKERS',
  'WEBHOOK_ALLOW_PRIVATE',
  'CORS_ORIGINS',
  'TRUST_PROXY',
  'METRICS_TOKEN',
  'REDIS_URL',
  'REPLICA_MAX_LAG',
  'ENV_STRICT',
];

/** The libpq variables the `postgres` driver reads for what `DATABASE_URL` leaves out (a password, say). */
export const DRIVER_SETTINGS: readonly string[] = [
  'PGHOST',
  'PGPORT',
  'PGDATABASE',
  'PGUSER',
  'PGUSERNAME',
  'PGPASSWORD',
  'PGAPPNAME',
  'PGTARGETSESSIONATTRS',
];

const KNOWN = new Set([...SETTINGS, ...DRIVER_SETTINGS]);

/**
 * One line for each name of `lineOf` (a `.env` file's names and their lines) that is no setting, naming the closest
 * setting when one is close.
 *
 * @example
 * unknownSettings(new Map([['DATABSE_URL', 3]]));
 * // ['.env line 3: DATABSE_URL is not a setting of the service; did you mean DATABASE_URL?']
 */
export function unknownSettings(lineOf: ReadonlyMap<string, number>): string[] {
  const lines: string[] = [];
  for (const [name, line] of lineOf) {
    if (KNOWN.has(name)) continue;
    const suggestion = nearest([...KNOWN], () => name);
    lines.push(
      `${ENV_FILE} line ${line}: ${name} is not a setting of the service` +
        (suggestion === undefined ? ' (it is ignored)' : `; did you mean ${suggestion}?`),
    );
  }
  return lines;
}

/** `ENV_STRICT=1`: an unknown name in `.env` stops the start (or the command) instead of a warning. */
export function strictEnv(env: Readonly<Record<string, string | undefined>>): boolean {
  return env.ENV_STRICT === '1';
}

/**
 * `env` over the working directory's `.env` (`loadEnvFile()`), with a line for each name of the file that is no
 * setting. With `ENV_STRICT=1` those are an `EnvFileError` instead (its message their lines, one per line).
 */
export function loadEnvSettings(
  env: Readonly<Record<string, string | undefined>>,
  cwd: string,
): { env: Record<string, string | undefined>; unknown: string[]; lineOf: ReadonlyMap<string, number> } {
  const lineOf = new Map<string, number>();
  const merged = loadEnvFile(env, cwd, lineOf);
  const unknown = unknownSettings(lineOf);
  if (unknown.length > 0 && strictEnv(merged)) throw new EnvFileError(`${unknown.join('\n')} (ENV_STRICT=1)`);
  return { env: merged, unknown, lineOf };
}
