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
  'TRUST_PROXY_HEADER',
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

/** A line for each name of a `.env` file (`lineOf`: its names and lines) that is no setting, naming a close one. */
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

/**
 * A line for each name of the environment that is a near miss of a setting (`DATABSE_URL`). It holds other
 * programs' variables, so only a name within a quarter of a setting's length is said (`USER` is not `PGUSER`).
 */
export function misspeltSettings(names: Iterable<string>): string[] {
  const lines: string[] = [];
  for (const name of names) {
    if (KNOWN.has(name)) continue;
    const suggestion = nearest([...KNOWN], () => name, 4);
    if (suggestion !== undefined)
      lines.push(`environment: ${name} is not a setting of the service; did you mean ${suggestion}?`);
  }
  return lines;
}

/** `ENV_STRICT=1`: an unknown name in `.env`, or a near miss in the environment, stops the start (or command). */
export function strictEnv(env: Readonly<Record<string, string | undefined>>): boolean {
  return env.ENV_STRICT === '1';
}

/**
 * `env` over the working directory's `.env`, with a line for each unknown name of the file and each near miss in
 * `env`; with `ENV_STRICT=1`, those lines are thrown as an `EnvFileError` instead.
 */
export function loadEnvSettings(
  env: Readonly<Record<string, string | undefined>>,
  cwd: string,
): { env: Record<string, string | undefined>; unknown: string[]; lineOf: ReadonlyMap<string, number> } {
  const lineOf = new Map<string, number>();
  const merged = loadEnvFile(env, cwd, lineOf);
  const unknown = [...misspeltSettings(Object.keys(env)), ...unknownSettings(lineOf)];
  if (unknown.length > 0 && strictEnv(merged)) throw new EnvFileError(`${unknown.join('\n')} (ENV_STRICT=1)`);
  return { env: merged, unknown, lineOf };
}
