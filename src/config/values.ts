/**
 * The parsers of single variables (contract §1): each applies its default, and throws a ConfigError whose message
 * is one line naming the variable (`main.ts` prints it and exits). Values that may hold a secret are never echoed.
 */
import type { RateLimit } from '../http/rate-limit.ts';
import { parseOrigin, type CorsOrigins } from '../http/cors.ts';
import { parseProxyEntry, type ProxyRange } from '../http/client-address.ts';

/** An invalid setting. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export type Env = Readonly<Record<string, string | undefined>>;

const INTEGER = /^[0-9]+$/;
const RATE_LIMIT = /^([1-9][0-9]*)\/([1-9][0-9]*)$/;
// RFC 3339 with an explicit offset, e.g. 2026-12-01T00:00:00Z.
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

function raw(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value === '' ? undefined : value;
}

/** `name` as an integer from `min` to `max`; `fallback` when unset or empty. */
export function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  const n = INTEGER.test(value) ? Number(value) : NaN;
  if (!(n >= min && n <= max)) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`);
  }
  return n;
}

/** `name`, or `fallback` when unset or empty. */
export function nonEmpty(env: Env, name: string, fallback: string): string {
  return raw(env, name) ?? fallback;
}

/** `name` as one of `allowed`; `fallback` when unset or empty. */
export function oneOf<T extends string>(env: Env, name: string, fallback: T, allowed: readonly T[]): T {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`);
  }
  return value as T;
}

/** `value` as a URL, `undefined` when it is none. */
function parsedUrl(value: string): URL | undefined {
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}

/** `DATABASE_URL`: a `postgres://` URL, `memory:`, or `undefined` for the embedded database in `DATA_DIR`. */
export function databaseUrl(env: Env): string | undefined {
  const value = raw(env, 'DATABASE_URL');
  if (value === undefined || value === 'memory:') return value;
  checkPostgresUrl(value, 'DATABASE_URL', 'a postgres:// URL or memory:');
  return value;
}

/** libpq's `target_session_attrs` (contract §17), each of which the driver takes. */
export const TARGET_SESSION_ATTRS = ['any', 'read-write', 'read-only', 'primary', 'standby', 'prefer-standby'];
const HOST_AND_PORT = /^([A-Za-z0-9._-]+)(?::([0-9]{1,5}))?$/;

/**
 * Checks a `postgres://` URL as the driver reads it: one host or several (`postgres://u@h1:5432,h2/db`), each a
 * name or IPv4 address with an optional port, and a known `target_session_attrs`. Never echoes the URL.
 */
function checkPostgresUrl(value: string, name: string, expected: string): void {
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(value)?.[1]?.toLowerCase();
  if (scheme === undefined) throw new ConfigError(`${name} must be ${expected}, got an unparsable value`);
  if (scheme !== 'postgres' && scheme !== 'postgresql')
    throw new ConfigError(`${name} must be ${expected}, got the scheme ${scheme}:`);
  const rest = value.slice(value.indexOf('://') + 3);
  checkUserinfo(rest, name);
  const authority = rest.split(/[/?#]/, 1)[0] as string;
  const hosts = authority.slice(authority.lastIndexOf('@') + 1);
  const list = hosts.split(',');
  if (list.length > 1) {
    for (const host of list) {
      const match = HOST_AND_PORT.exec(host);
      if (match === null || (match[2] !== undefined && !(Number(match[2]) >= 1 && Number(match[2]) <= 65535)))
        throw new ConfigError(
          `${name} lists the host ${JSON.stringify(host)}: each host of several is a name or IPv4 address with an ` +
            'optional port (host:5432)',
        );
    }
  }
  // The first host stands for all of them, as the driver parses the rest.
  const parsed = parsedUrl(value.replace(hosts, list[0] as string));
  if (parsed === undefined) throw new ConfigError(`${name} must be ${expected}, got an unparsable value`);
  const attrs = parsed.searchParams.get('target_session_attrs');
  if (attrs !== null && !TARGET_SESSION_ATTRS.includes(attrs))
    throw new ConfigError(
      `${name}'s target_session_attrs must be one of ${TARGET_SESSION_ATTRS.join(', ')}, got ${JSON.stringify(attrs)}`,
    );
}

/** What follows a URL's user name and password: its hosts (names, addresses, ports), then its path, query or end. */
const HOSTS_THEN_PATH = /^[A-Za-z0-9._,:[\]%-]*(?:[/?#]|$)/;

/**
 * A user name or password must have `@`, `/`, `?` and `#` percent-encoded: unencoded, the driver reads the host
 * from inside the password and says only `ENOTFOUND`. The value is never echoed.
 */
function checkUserinfo(rest: string, name: string): void {
  const at = rest.lastIndexOf('@');
  if (at === -1 || !/[@/?#]/.test(rest.slice(0, at)) || !HOSTS_THEN_PATH.test(rest.slice(at + 1))) return;
  throw new ConfigError(
    `${name}: its user name or password holds an "@", "/", "?" or "#" that is not percent-encoded, so the host ` +
      'would be read from inside it; write them as %40, %2F, %3F and %23 (encodeURIComponent() does)',
  );
}

const REDIS_DATABASE = /^\/(?:[0-9]|1[0-5])?$/;

/** `redis://[user:password@]host[:port][/db]` (or `rediss://`, TLS), db 0–15; never echoed: it may hold a password. */
export function redis(env: Env): string | undefined {
  const value = raw(env, 'REDIS_URL');
  if (value === undefined) return undefined;
  const url = parsedUrl(value);
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

/** A `postgres://` URL in `name`, of one host or several (`checkPostgresUrl`); never echoed: it may hold a password. */
export function postgresUrl(env: Env, name: string): string | undefined {
  const value = raw(env, name);
  if (value === undefined) return undefined;
  checkPostgresUrl(value, name, 'a postgres:// URL');
  return value;
}

/** `RATE_LIMIT`: `<requests>/<window seconds>`, 600/60 when unset; `undefined` for `off`. */
export function rateLimit(env: Env): RateLimit | undefined {
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

/** `name` as an RFC 3339 timestamp with an explicit offset; `fallback` when unset or empty. */
export function date(env: Env, name: string, fallback: string): Date {
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
export function cors(env: Env): CorsOrigins | undefined {
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
export function proxies(env: Env): ProxyRange[] | undefined {
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

/** `name` as a bearer token; never echoed: it is a secret. */
export function bearerToken(env: Env, name: string): string | undefined {
  const value = raw(env, name);
  if (value === undefined) return undefined;
  if (!BEARER_TOKEN.test(value))
    throw new ConfigError(`${name} must be at least 16 characters of A-Z, a-z, 0-9, -._~+/ (a bearer token)`);
  return value;
}
