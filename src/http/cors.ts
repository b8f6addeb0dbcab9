/**
 * CORS (contract §16; the Fetch standard, §3.2 "CORS protocol"): which browser
 * origins may call the API, and the fields that say so. Pure functions over
 * header strings; the pipeline (src/pipeline/pipeline.ts) applies them in one place.
 *
 * `Access-Control-Allow-Origin` always names the request's own origin, also
 * when `CORS_ORIGINS=*`, and `Access-Control-Allow-Credentials` is never
 * sent: the API authenticates with bearer tokens that a script puts in
 * `Authorization`, not with cookies, so no request needs the `include`
 * credentials mode, and one that uses it is refused by the browser. Naming
 * the origin (never `*`) keeps one rule for both configurations, and a
 * credentialed wildcard can never appear should cookies ever be added.
 */

/** `*`: every origin; else the listed ones, normalised (`parseOrigin()`). */
export type CorsOrigins = '*' | readonly string[];

/**
 * The request fields a cross-origin script may send beyond the CORS-safelisted
 * ones (Fetch §2.2.2), answered in `Access-Control-Allow-Headers`. The whole
 * list on every preflight: it holds every requested field that is allowed,
 * and a requested field not in it makes the browser refuse the request.
 */
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

// An origin as browsers serialize it (Fetch §3.1; HTML "serialization of an
// origin"): scheme "://" host [":" port], lower case, no path. `null` (an
// opaque origin: sandboxed frames, file: pages) is never allowed.
const SERIALIZED_ORIGIN = /^[a-z][a-z0-9+.-]*:\/\/(?:\[[0-9a-f:.]+\]|[a-z0-9._~-]+)(?::[0-9]{1,5})?$/;
// What CORS_ORIGINS may name: http or https, a host, an optional port, nothing after.
const CONFIGURED_ORIGIN = /^https?:\/\/[^/?#@\s]+$/i;

/**
 * The origin `value` names, as a browser sends it in `Origin` (lower case,
 * no default port, international names in punycode); `undefined` when it is
 * not scheme://host[:port] with scheme http or https and nothing after.
 *
 * ```ts
 * parseOrigin('https://App.Example:443'); // 'https://app.example'
 * parseOrigin('https://app.example/');    // undefined (a path)
 * ```
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

/**
 * The policy of `origins`, read once: for a request's `Origin` field, the
 * value of `Access-Control-Allow-Origin` to answer with, or `undefined` when
 * that origin gets no CORS fields (absent, malformed, `null`, not listed).
 *
 * ```ts
 * const allow = corsPolicy(['https://a.example']);
 * allow('https://a.example'); // 'https://a.example'
 * allow('https://b.example'); // undefined
 * ```
 */
export function corsPolicy(origins: CorsOrigins): (origin: string | null) => string | undefined {
  if (origins === '*') return (origin) => (origin !== null && SERIALIZED_ORIGIN.test(origin) ? origin : undefined);
  const listed: ReadonlySet<string> = new Set(origins);
  // Fetch compares origins byte for byte; the configured ones are normalised to what browsers send.
  return (origin) => (origin !== null && listed.has(origin) ? origin : undefined);
}

/**
 * True for a CORS preflight (Fetch §3.2.2): an OPTIONS request with `Origin`
 * and `Access-Control-Request-Method`.
 */
export function isPreflight(method: string, origin: string | null, requestMethod: string | null): boolean {
  return method === 'OPTIONS' && origin !== null && requestMethod !== null;
}

/**
 * The fields of the answer to a preflight from the allowed `origin` on a
 * path whose methods are `allow` (its `Allow` value). `Vary` is the caller's
 * to add (`PREFLIGHT_VARY`), merged with what the response already varies on.
 */
export function preflightFields(origin: string, allow: string): [string, string][] {
  return [
    ['access-control-allow-origin', origin],
    ['access-control-allow-methods', allow],
    ['access-control-allow-headers', ALLOWED_HEADERS.join(', ')],
    ['access-control-max-age', String(MAX_AGE_SECONDS)],
  ];
}

/**
 * The fields of any other answer (success, error or 304) to the allowed `origin`; `Vary: Origin` is the caller's to
 * add.
 */
export function responseFields(origin: string): [string, string][] {
  return [
    ['access-control-allow-origin', origin],
    ['access-control-expose-headers', EXPOSED_HEADERS.join(', ')],
  ];
}

/**
 * `Vary` with `names` added to the field value `current` (`null`: absent),
 * each name once (compared without regard to case), in order.
 *
 * ```ts
 * varyWith('Accept, Authorization', ['Origin']); // 'Accept, Authorization, Origin'
 * varyWith(null, ['Origin']);                     // 'Origin'
 * ```
 */
export function varyWith(current: string | null, names: readonly string[]): string {
  if (current === null || current === '') return names.join(', ');
  if (current.trim() === '*') return current;
  const held = current.split(',').map((name) => name.trim().toLowerCase());
  const added = names.filter((name) => !held.includes(name.toLowerCase()));
  return added.length === 0 ? current : `${current}, ${added.join(', ')}`;
}
