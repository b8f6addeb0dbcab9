/**
 * What each response field of the service means, once: the text of its
 * entry in `components.headers`. Which fields go on which answer, and which
 * of them every such answer carries, is `response-fields.ts`.
 */
type Json = Record<string, unknown>;

const text = { type: 'string' } as const;

/** The media types an answer may be coded in (src/http/compression.ts, `isCompressible()`). */
const COMPRESSIBLE =
  'text/* (HTML, Markdown, CSS, JavaScript, the metrics), JSON (problem+json and the vendor types included), ' +
  'XML and SVG';

/** Every field a response of the service may carry, by name. */
export const HEADERS: Readonly<Record<string, Json>> = {
  ETag: {
    description:
      'Strong, opaque entity tag of this representation (contract §9): of an order, from its revision, the API ' +
      'version and the media type; of anything else, from its exact bytes. Each content coding has its own strong ' +
      'tag: the identity tag with -gzip or -br appended inside the quotes ("x" and "x-gzip"); If-None-Match with ' +
      'any of them answers 304.',
    schema: text,
  },
  Location: { description: 'The created resource.', schema: text },
  Link: {
    description:
      'RFC 8288 links: first, prev, next, last of a collection; on version 1 also rel="successor-version", the ' +
      'same path under /v2.',
    schema: text,
  },
  'Cache-Control': {
    description:
      'private, max-age for orders and items; public, max-age for products, the pages and this document; ' +
      'no-store for users, payments, health checks, metrics, writes and errors.',
    schema: text,
  },
  Vary: {
    description:
      'Accept on the versioned paths (and the problem pages); Authorization where the answer depends on the ' +
      'caller; Accept-Encoding on every answer with content and every 304 (the content coding is chosen by it, ' +
      "identity included); Origin on every answer once CORS_ORIGINS is set (a preflight's also " +
      'Access-Control-Request-Method and -Headers). Absent when none applies.',
    schema: text,
  },
  'Content-Encoding': {
    description:
      'The coding of a compressed answer: br or gzip, as Accept-Encoding prefers (q-values; br first at equal ' +
      `weight). An answer is compressed when it is 1 KiB or more, of a compressible type (${COMPRESSIBLE}), and ` +
      'Accept-Encoding allows a coding; else it is sent as it is, without this field. Its Content-Length and ' +
      "ETag are the coded representation's.",
    schema: { type: 'string', enum: ['gzip', 'br'] },
  },
  'X-Request-Id': {
    description:
      'The request id: the one sent when it is 1–128 visible characters, else a generated one. On every response.',
    schema: text,
  },
  RateLimit: {
    description:
      'draft-ietf-httpapi-ratelimit-headers: "default";r=<remaining>;t=<seconds to reset>. On every counted ' +
      "answer, errors included (RATE_LIMIT on, the default); never on /healthz and /readyz's, nor on those not " +
      "counted (a CORS preflight's 204; with METRICS_TOKEN, a successful GET /metrics); absent when " +
      'RATE_LIMIT=off.',
    schema: text,
  },
  'RateLimit-Policy': {
    description:
      'draft-ietf-httpapi-ratelimit-headers: "default";q=<limit>;w=<window seconds>. On the answers that carry ' +
      'RateLimit (RATE_LIMIT on, the default); absent when RATE_LIMIT=off.',
    schema: text,
  },
  Deprecation: { description: 'RFC 9745, on every version 1 response: @<unix seconds>.', schema: text },
  Sunset: {
    description: 'RFC 8594, on every version 1 response: the IMF-fixdate after which version 1 answers 410.',
    schema: text,
  },
  'Idempotent-Replayed': {
    description:
      'true when this is the stored result of an earlier request with the same Idempotency-Key (contract §7).',
    schema: { type: 'string', enum: ['true'] },
  },
  'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 1 } },
  Allow: { description: 'The methods of this path.', schema: text },
  'Accept-Patch': { description: 'The media types PATCH accepts.', schema: text },
  'Accept-Encoding': {
    description:
      'RFC 7694: on a 415 for a request body sent with a Content-Encoding, the codings the service takes: identity.',
    schema: text,
  },
  'WWW-Authenticate': {
    description:
      'Bearer realm="orders" (plus error="invalid_token"), or Bearer error="insufficient_scope", scope="…" (RFC ' +
      '6750); on GET /metrics behind METRICS_TOKEN, Bearer realm="metrics".',
    schema: text,
  },
  'Content-Security-Policy': {
    description:
      "On /docs: this origin only, no inline script (default-src 'none'; script-src 'self'; style-src 'self'; …). " +
      "On a problem page in HTML: nothing but the page's own inline style, allowed by its hash.",
    schema: text,
  },
  'X-Content-Type-Options': {
    description: 'nosniff: the Content-Type is the only type to read the answer as (the pages and their files).',
    schema: { type: 'string', enum: ['nosniff'] },
  },
  'Access-Control-Allow-Origin': {
    description: 'With CORS_ORIGINS set, on every answer to a request whose Origin is listed: that origin (never *).',
    schema: text,
  },
  'Access-Control-Expose-Headers': {
    description:
      "With CORS_ORIGINS set, on every answer to a listed origin but a preflight's: the fields a script may read " +
      '(ETag, Location, Link, the rate-limit fields, Retry-After, Deprecation, Sunset, X-Request-Id, ' +
      'Idempotent-Replayed).',
    schema: text,
  },
  'Access-Control-Allow-Methods': {
    description: 'The answer to a CORS preflight from a listed origin: the methods of this path.',
    schema: text,
  },
  'Access-Control-Allow-Headers': {
    description:
      'The answer to a CORS preflight from a listed origin: the request fields a script may send (Authorization, ' +
      'Idempotency-Key, If-Match, If-None-Match among them).',
    schema: text,
  },
  'Access-Control-Max-Age': {
    description: 'The answer to a CORS preflight from a listed origin: seconds a browser may reuse it.',
    schema: { type: 'integer', minimum: 0 },
  },
};
