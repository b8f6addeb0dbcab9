/** The service's configuration (contract §1), read once from the environment; an invalid value throws a ConfigError. */
import type { LogLevel } from '../base/logger.ts';
import type { RateLimit } from '../http/rate-limit.ts';
import type { CorsOrigins } from '../http/cors.ts';
import { PROXY_HEADERS, type ProxyHeader, type ProxyRange } from '../http/client-address.ts';
import { connectionLimits, fileDescriptorLimit, type ConnectionLimits } from './connections.ts';
import {
  bearerToken,
  ConfigError,
  cors,
  databaseUrl,
  date,
  integer,
  nonEmpty,
  oneOf,
  postgresUrl,
  proxies,
  rateLimit,
  redis,
  type Env,
} from './values.ts';

export interface Config extends ConnectionLimits {
  readonly port: number;
  readonly host: string;
  /** `undefined`: the embedded database in `dataDir`; `memory:`: an in-memory embedded one. */
  readonly databaseUrl: string | undefined;
  readonly dataDir: string;
  readonly dbPoolMax: number;
  /** `DATABASE_WAIT`: how long start-up waits for the database to answer, in milliseconds (0: one attempt). */
  readonly databaseWaitMs: number;
  readonly maxBodyBytes: number;
  /** `BODY_BUDGET_BYTES`: what every request body being read or handled at once may hold. */
  readonly bodyBudgetBytes: number;
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
  /** `CORS_ORIGINS` (contract §16): `*` or the origins browsers may call from, normalised; absent: no CORS fields. */
  readonly corsOrigins?: CorsOrigins;
  /** `TRUST_PROXY`: the reverse proxies whose forwarded client address is believed; absent: none. */
  readonly trustProxy?: readonly ProxyRange[];
  /** `TRUST_PROXY_HEADER`: the one field those proxies write the address in; `x-forwarded-for` by default. */
  readonly trustProxyHeader: ProxyHeader;
  /** `METRICS_TOKEN`: the bearer token `GET /metrics` needs; absent: none. */
  readonly metricsToken?: string;
  /**
   * `DB_PREPARE`: `false` for a transaction-mode pooler (PgBouncer before 1.21): no named prepared statements and
   * no startup parameter beyond the pooler's own; the statement time-out is the client's then.
   */
  readonly dbPrepare: boolean;
  /** `REDIS_URL`: the Redis that every process shares its rate-limit windows through; absent: none. */
  readonly redisUrl?: string;
  /** `DATABASE_READ_URL`: a streaming replica of `DATABASE_URL` for safe reads; absent: none. */
  readonly databaseReadUrl?: string;
  /** `REPLICA_MAX_LAG`: seconds a replica may be behind and still serve reads. */
  readonly replicaMaxLagSeconds: number;
}

const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error', 'silent'];

/** The configuration of `env`, with its defaults; the connection caps' from `fileDescriptors` (`connections.ts`). */
export function loadConfig(env: Env = process.env, fileDescriptors = fileDescriptorLimit()): Config {
  let config: Config = {
    port: integer(env, 'PORT', 3000, 0, 65535),
    host: nonEmpty(env, 'HOST', '127.0.0.1'),
    databaseUrl: databaseUrl(env),
    dataDir: nonEmpty(env, 'DATA_DIR', './data'),
    dbPoolMax: integer(env, 'DB_POOL_MAX', 10, 1, 1000),
    databaseWaitMs: integer(env, 'DATABASE_WAIT', 30, 0, 3600) * 1000,
    maxBodyBytes: integer(env, 'MAX_BODY_BYTES', 1_048_576, 1, 1024 ** 3),
    bodyBudgetBytes: integer(env, 'BODY_BUDGET_BYTES', 64 * 1_048_576, 1, 1024 ** 4),
    ...connectionLimits(env, fileDescriptors),
    rateLimit: rateLimit(env),
    cacheMaxAge: integer(env, 'CACHE_MAX_AGE', 60, 0, 31_536_000),
    v1DeprecatedAt: date(env, 'V1_DEPRECATED_AT', '2026-12-01T00:00:00Z'),
    v1SunsetAt: date(env, 'V1_SUNSET_AT', '2027-06-01T00:00:00Z'),
    logLevel: oneOf(env, 'LOG_LEVEL', 'info', LOG_LEVELS),
    workers: integer(env, 'WORKERS', 1, 1, 64),
    webhookAllowPrivate: oneOf(env, 'WEBHOOK_ALLOW_PRIVATE', '0', ['0', '1']) === '1',
    dbPrepare: oneOf(env, 'DB_PREPARE', 'on', ['on', 'off']) === 'on',
    replicaMaxLagSeconds: integer(env, 'REPLICA_MAX_LAG', 5, 1, 3600),
    trustProxyHeader: oneOf(env, 'TRUST_PROXY_HEADER', 'x-forwarded-for', PROXY_HEADERS),
  };
  // Unset, these are absent from the configuration.
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
  // contract §11: a body of the largest size must fit in the budget, or it could never be read.
  if (config.bodyBudgetBytes < config.maxBodyBytes) {
    throw new ConfigError(
      `BODY_BUDGET_BYTES (${config.bodyBudgetBytes}) must not be below MAX_BODY_BYTES (${config.maxBodyBytes})`,
    );
  }
  if (config.v1SunsetAt.getTime() < config.v1DeprecatedAt.getTime()) {
    throw new ConfigError('V1_SUNSET_AT must not be earlier than V1_DEPRECATED_AT');
  }
  return config;
}
