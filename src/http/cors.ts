/**
 * CORS (contract §16; Fetch §3.2): which browser origins may call the API, and the fields that say so; the pipeline
 * applies them in one place. `Access-Control-Allow-Origin` always names the request's own origin, also with
 * `CORS_ORIGINS=*`, and `Access-Control-Allow-Credentials` is never sent: the API authenticates with bearer tokens
 * in `Authorization`, not cookies, so no request needs the `include` credentials mode. Naming the origin keeps one
 * rule for both configurations, and a credentialed wildcard can never appear should cookies ever be added.
 */

/** `*`: every origin; else the listed ones, normalised (`parseOrigin()`). */
export type CorsOrigins = '*' | readonly string[];

/** Request fields a script may send beyond the safelisted ones (Fetch §2.2.2): the whole list on every preflight. */
export const ALLOWED_HEADERS = [
  'Accept',
  'Authorization',
  'Content-Type',
  'Idempotency-Key',
  'If-Match',
  'If-None-Match',
  'X-Request-Id',
] as const;

/** The response fields a script may read beyond the CORS-safelisted ones (Fetch §2.2.6). */
export const EXPOSED_HEADERS = [
  'ETag',
  'Location',
  'Link',
  'RateLimit',
  'RateLimit-Policy',
  'Retry-After',
  'Deprecation',
  'Sunset',
  'X-Request-Id',
  'Idempotent-Replayed',
] as const;

/** How long a browser may reuse a preflight's answer: Chromium's cap (Firefox allows a day). */
export const MAX_AGE_SECONDS = 7200;

/** `Vary` of a preflight's answer: it depends on these request fields. */
export const PREFLIGHT_VARY = ['Origin', 'Access-Control-Request-Method', 'Access-Control-Request-Headers'] as const;

// An origin as browsers serialize it (Fetch §3.1): scheme://host[:port], lower case; `null` (opaque) never allowed.
const SERIALIZED_ORIGIN = /^[a-z][a-z0-9+.-]*:\/\/(?:\[[0-9a-f:.]+\]|[a-z0-9._~-]+)(?::[0-9]{1,5})?$/;
// What CORS_ORIGINS may name: http or https, a host, an optional port, nothing after.
const CONFIGURED_ORIGIN = /^https?:\/\/[^/?#@\s]+$/i;

/**
 * The origin `value` names, normalised as a browser sends it (lower case, no default port, punycode); `undefined`
 * unless it is http(s)://host[:port] with nothing after.
 */
export function parseOrigin(value: string): string | undefined {
  if (!CONFIGURED_ORIGIN.test(value)) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  return url.origin === 'null' || url.hostname === '' ? undefined : url.origin;
}

/** For a request's `Origin`, the `Access-Control-Allow-Origin` to answer with, or `undefined` for no CORS fields. */
export function corsPolicy(origins: CorsOrigins): (origin: string | null) => string | undefined {
  if (origins === '*') return (origin) => (origin !== null && SERIALIZED_ORIGIN.test(origin) ? origin : undefined);
  const listed: ReadonlySet<string> = new Set(origins);
  // Fetch compares origins byte for byte; the configured ones are normalised to what browsers send.
  return (origin) => (origin !== null && listed.has(origin) ? origin : undefined);
}

/** Whether the request is a CORS preflight (Fetch §3.2.2). */
export function isPreflight(method: string, origin: string | null, requestMethod: string | null): boolean {
  return method === 'OPTIONS' && origin !== null && requestMethod !== null;
}

/** A preflight's answer fields for the allowed `origin` on a path whose `Allow` is `allow`; `Vary` is the caller's. */
export function preflightFields(origin: string, allow: string): [string, string][] {
  return [
    ['access-control-allow-origin', origin],
    ['access-control-allow-methods', allow],
    ['access-control-allow-headers', ALLOWED_HEADERS.join(', ')],
    ['access-control-max-age', String(MAX_AGE_SECONDS)],
  ];
}

/** The fields of any other answer to the allowed `origin`; `Vary: Origin` is the caller's to add. */
export function responseFields(origin: string): [string, string][] {
  return [
    ['access-control-allow-origin', origin],
    ['access-control-expose-headers', EXPOSED_HEADERS.join(', ')],
  ];
}

/**
 * `Vary` value `current` (`null`: absent) with `names` added, each once, compared without regard to case. Remembered
 * by `names` (the stages' constant lists) and `current`: an answer's `Vary` is one of a few, worked out once each.
 */
export function varyWith(current: string | null, names: readonly string[]): string {
  const key = current ?? '';
  let memo = VARY_MEMO.get(names);
  const known = memo?.get(key);
  if (known !== undefined) return known;
  const value = addedTo(current, names);
  if (memo === undefined) {
    memo = new Map();
    VARY_MEMO.set(names, memo);
  }
  if (memo.size < VARY_MEMO_MAX) memo.set(key, value);
  return value;
}
const VARY_MEMO = new WeakMap<readonly string[], Map<string, string>>();
const VARY_MEMO_MAX = 64;

function addedTo(current: string | null, names: readonly string[]): string {
  if (current === null || current === '') return names.join(', ');
  if (current.trim() === '*') return current;
  const held = current.split(',').map((name) => name.trim().toLowerCase());
  const added = names.filter((name) => !held.includes(name.toLowerCase()));
  return added.length === 0 ? current : `${current}, ${added.join(', ')}`;
}
