/**
 * The service's configuration (contract §1), read once from the environment.
 * An invalid value throws a ConfigError whose message is one line naming the
 * variable; `main.ts` prints it and exits.
 */
import type { LogLevel } from '../base/logger.ts';
import type { RateLimit } from '../http/rate-limit.ts';
import { parseOrigin, type CorsOrigins } from '../http/cors.ts';
import { parseProxyEntry, type ProxyRange } from '../http/client-address.ts';

export interface Config {
  readonly port: number;
  readonly host: string;
  /** `undefined`: the embedded database in `dataDir`; `memory:`: an in-memory embedded one. */
  readonly databaseUrl: string | undefined;
  readonly dataDir: string;
  readonly dbPoolMax: number;
  readonly maxBodyBytes: number;
  /** `undefined` when `RATE_LIMIT=off`. */
  readonly rateLimit: RateLimit | undefined;
  readonly cacheMaxAge: number;
  readonly v1DeprecatedAt: Date;
  readonly v1SunsetAt: Date;
  readonly logLevel: LogLevel;
  /** HTTP processes sharing the port (`node:cluster`); more than 1 needs a real PostgreSQL server. */
  readonly workers: number;
  /** `WEBHOOK_ALLOW_PRIVATE=1`: webhook targets may be private or loopback addresses (tests, local development). */
  readonly webhookAllowPrivate: boolean;
  /**
   * `CORS_ORIGINS` (contract §16): `*` or the origins browsers may call from, normalised; absent: no CORS fields at
   * all.
   */
  readonly corsOrigins?: CorsOrigins;
  /** `TRUST_PROXY` (contract §16): the reverse proxies whose forwarded client address is believed; absent: none. */
  readonly trustProxy?: readonly ProxyRange[];
  /** `METRICS_TOKEN` (contract §16): the bearer token `GET /metrics` needs; absent: none. */
  readonly metricsToken?: string;
  /**
   * `DB_PREPARE` (contract §17): `false` for a transaction-mode pooler (PgBouncer before 1.21): no named prepared
   * statements and no startup parameter beyond the pooler's own; the statement time-out is the client's then.
   */
  readonly dbPrepare: boolean;
  /** `REDIS_URL` (contract §17): the Redis that every process shares its rate-limit windows through; absent: none. */
  readonly redisUrl?: string;
  /** `DATABASE_READ_URL` (contract §17): a streaming replica of `DATABASE_URL` for safe reads; absent: none. */
  readonly databaseReadUrl?: string;
  /** `REPLICA_MAX_LAG` (contract §17): seconds a replica may be behind and still serve reads. */
  readonly replicaMaxLagSeconds: number;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Readonly<Record<string, string | undefined>>;

const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error', 'silent'];
const INTEGER = /^[0-9]+$/;
const RATE_LIMIT = /^([1-9][0-9]*)\/([1-9][0-9]*)$/;
// RFC 3339 with an explicit offset, e.g. 2026-12-01T00:00:00Z.
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

/** Reads the §1 variables from `env`, applying the defaults. */
export function loadConfig(env: Env = process.env): Config {
  let config: Config = {
    port: integer(env, 'PORT', 3000, 0, 65535),
    host: nonEmpty(env, 'HOST', '127.0.0.1'),
    databaseUrl: databaseUrl(env),
    dataDir: nonEmpty(env, 'DATA_DIR', './data'),
    dbPoolMax: integer(env, 'DB_POOL_MAX', 10, 1, 1000),
    maxBodyBytes: integer(env, 'MAX_BODY_BYTES', 1_048_576, 1, 1024 ** 3),
    rateLimit: rateLimit(env),
    cacheMaxAge: integer(env, 'CACHE_MAX_AGE', 60, 0, 31_536_000),
    v1DeprecatedAt: date(env, 'V1_DEPRECATED_AT', '2026-12-01T00:00:00Z'),
    v1SunsetAt: date(env, 'V1_SUNSET_AT', '2027-06-01T00:00:00Z'),
    logLevel: oneOf(env, 'LOG_LEVEL', 'info', LOG_LEVELS),
    workers: integer(env, 'WORKERS', 1, 1, 64),
    webhookAllowPrivate: oneOf(env, 'WEBHOOK_ALLOW_PRIVATE', '0', ['0', '1']) === '1',
    dbPrepare: oneOf(env, 'DB_PREPARE', 'on', ['on', 'off']) === 'on',
    replicaMaxLagSeconds: integer(env, 'REPLICA_MAX_LAG', 5, 1, 3600),
  };
  // contract §16's variables are absent from the configuration when unset.
  const corsOrigins = cors(env);
  const trustProxy = proxies(env);
  const metricsToken = bearerToken(env, 'METRICS_TOKEN');
  const redisUrl = redis(env);
  const databaseReadUrl = postgresUrl(env, 'DATABASE_READ_URL');
  if (corsOrigins !== undefined) config = { ...config, corsOrigins };
  if (redisUrl !== undefined) config = { ...config, redisUrl };
  if (databaseReadUrl !== undefined) config = { ...config, databaseReadUrl };
  if (trustProxy !== undefined) config = { ...config, trustProxy };
  if (metricsToken !== undefined) config = { ...config, metricsToken };
  if (config.workers > 1 && (config.databaseUrl === undefined || config.databaseUrl === 'memory:')) {
    throw new ConfigError('WORKERS above 1 needs DATABASE_URL: the embedded database serves one process');
  }
  if (databaseReadUrl !== undefined && (config.databaseUrl === undefined || config.databaseUrl === 'memory:')) {
    throw new ConfigError('DATABASE_READ_URL needs DATABASE_URL: it names a replica of that server');
  }
  // contract §17: a principal's last write must be seen by every process that may route its reads.
  if (databaseReadUrl !== undefined && config.workers > 1 && redisUrl === undefined) {
    throw new ConfigError(
      'DATABASE_READ_URL with WORKERS above 1 needs REDIS_URL: every worker must see where a principal last wrote, ' +
        'so that its reads never go to a replica that has not replayed it',
    );
  }
  if (config.v1SunsetAt.getTime() < config.v1DeprecatedAt.getTime()) {
    throw new ConfigError('V1_SUNSET_AT must not be earlier than V1_DEPRECATED_AT');
  }
  return config;
}

function raw(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value === '' ? undefined : value;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  const n = INTEGER.test(value) ? Number(value) : NaN;
  if (!(n >= min && n <= max)) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`);
  }
  return n;
}

function nonEmpty(env: Env, name: string, fallback: string): string {
  return raw(env, name) ?? fallback;
}

function oneOf<T extends string>(env: Env, name: string, fallback: T, allowed: readonly T[]): T {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`);
  }
  return value as T;
}

function databaseUrl(env: Env): string | undefined {
  const value = raw(env, 'DATABASE_URL');
  if (value === undefined || value === 'memory:') return value;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError('DATABASE_URL must be a postgres:// URL or memory:, got an unparsable value');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    // Never echo the value: it may hold a password.
    throw new ConfigError(`DATABASE_URL must be a postgres:// URL or memory:, got the scheme ${url.protocol}`);
  }
  return value;
}

const REDIS_DATABASE = /^\/(?:[0-9]|1[0-5])?$/;

/** `redis://[user:password@]host[:port][/db]` (or `rediss://`, TLS), db 0–15; never echoed: it may hold a password. */
function redis(env: Env): string | undefined {
  const value = raw(env, 'REDIS_URL');
  if (value === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  const valid =
    url !== undefined &&
    (url.protocol === 'redis:' || url.protocol === 'rediss:') &&
    url.hostname !== '' &&
    (url.pathname === '' || REDIS_DATABASE.test(url.pathname)) &&
    url.search === '' &&
    url.hash === '';
  if (!valid) throw new ConfigError('REDIS_URL must be redis://[user:password@]host[:port][/db] with db 0 to 15');
  return value;
}

/** A `postgres://` URL in `name`; never echoed: it may hold a password. */
function postgresUrl(env: Env, name: string): string | undefined {
  const value = raw(env, name);
  if (value === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:'))
    throw new ConfigError(`${name} must be a postgres:// URL`);
  return value;
}

function rateLimit(env: Env): RateLimit | undefined {
  const value = raw(env, 'RATE_LIMIT') ?? '600/60';
  if (value === 'off') return undefined;
  const match = RATE_LIMIT.exec(value);
  if (!match) {
    throw new ConfigError(
      `RATE_LIMIT must be <requests>/<window seconds> (e.g. 600/60) or off, got ${JSON.stringify(value)}`,
    );
  }
  return { limit: Number(match[1]), windowSeconds: Number(match[2]) };
}

function date(env: Env, name: string, fallback: string): Date {
  const value = raw(env, name) ?? fallback;
  const parsed = RFC3339.test(value) ? new Date(value) : new Date(NaN);
  if (Number.isNaN(parsed.getTime())) {
    throw new ConfigError(
      `${name} must be an RFC 3339 timestamp such as 2026-12-01T00:00:00Z, got ${JSON.stringify(value)}`,
    );
  }
  return parsed;
}

/** `*`, or comma-separated origins (scheme://host[:port], no path), normalised as browsers send them. */
function cors(env: Env): CorsOrigins | undefined {
  const value = raw(env, 'CORS_ORIGINS');
  if (value === undefined) return undefined;
  if (value.trim() === '*') return '*';
  const origins = new Set<string>();
  for (const entry of value.split(',').map((part) => part.trim())) {
    const origin = parseOrigin(entry);
    if (origin === undefined) {
      throw new ConfigError(
        'CORS_ORIGINS must be * or a comma-separated list of origins such as https://app.example.com (http or ' +
          `https, host, optional port, no path), got ${JSON.stringify(entry)}`,
      );
    }
    origins.add(origin);
  }
  return [...origins];
}

/** Comma-separated IP addresses and CIDR ranges, IPv4 or IPv6, or `loopback`. */
function proxies(env: Env): ProxyRange[] | undefined {
  const value = raw(env, 'TRUST_PROXY');
  if (value === undefined) return undefined;
  const ranges: ProxyRange[] = [];
  for (const entry of value.split(',').map((part) => part.trim())) {
    const parsed = parseProxyEntry(entry);
    if (parsed === undefined) {
      throw new ConfigError(
        'TRUST_PROXY must be a comma-separated list of IP addresses or CIDR ranges (e.g. 10.0.0.0/8, ' +
          `2001:db8::/32) or loopback, got ${JSON.stringify(entry)}`,
      );
    }
    ranges.push(...parsed);
  }
  return ranges;
}

// RFC 6750 §2.1 b64token, at least 16 characters: a secret worth the name.
const BEARER_TOKEN = /^[A-Za-z0-9\-._~+/]{16,}=*$/;

function bearerToken(env: Env, name: string): string | undefined {
  const value = raw(env, name);
  if (value === undefined) return undefined;
  // Never echo the value: it is a secret.
  if (!BEARER_TOKEN.test(value))
    throw new ConfigError(`${name} must be at least 16 characters of A-Z, a-z, 0-9, -._~+/ (a bearer token)`);
  return value;
}
