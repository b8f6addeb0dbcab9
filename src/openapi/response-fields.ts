/**
 * The fields of the document's responses: each header field once, as a
 * component (`HEADERS`), and which of them go on which kind of answer. A
 * response refers to its fields through `fields()`.
 */
import type { Version } from '../http/negotiation.ts';
import type { ProblemSlug } from '../http/problem.ts';

type Json = Record<string, unknown>;

const header = (name: string) => ({ $ref: `#/components/headers/${name}` });

/** `components.headers`: every field a response of the service may carry. */
export const HEADERS: Json = {
  ETag: {
    description:
      'Strong, opaque entity tag of this representation (contract §9): of an order, from its revision, the API ' +
      'version and the media type; of anything else, from its exact bytes.',
    schema: { type: 'string' },
  },
  Location: { description: 'The created resource.', schema: { type: 'string' } },
  Link: {
    description:
      'RFC 8288 links: first, prev, next, last of a collection; on version 1 also rel="successor-version", the ' +
      'same path under /v2.',
    schema: { type: 'string' },
  },
  'Cache-Control': {
    description:
      'private, max-age for orders and items; public, max-age for products; no-store for users, payments and errors.',
    schema: { type: 'string' },
  },
  Vary: {
    description:
      'Accept on the versioned paths; Authorization where the answer depends on the caller; Origin on every ' +
      "answer once CORS_ORIGINS is set (a preflight's also Access-Control-Request-Method and -Headers). Absent " +
      'when none applies.',
    schema: { type: 'string' },
  },
  'X-Request-Id': {
    description:
      'The request id: the one sent when it is 1–128 visible characters, else a generated one. On every response.',
    schema: { type: 'string' },
  },
  RateLimit: {
    description:
      'draft-ietf-httpapi-ratelimit-headers: "default";r=<remaining>;t=<seconds to reset>. On every response, ' +
      'errors included, but those of /healthz and /readyz (never limited); absent when RATE_LIMIT=off.',
    schema: { type: 'string' },
  },
  'RateLimit-Policy': {
    description:
      'draft-ietf-httpapi-ratelimit-headers: "default";q=<limit>;w=<window seconds>. On every response, errors ' +
      'included, but those of /healthz and /readyz (never limited); absent when RATE_LIMIT=off.',
    schema: { type: 'string' },
  },
  Deprecation: { description: 'RFC 9745, on every version 1 response: @<unix seconds>.', schema: { type: 'string' } },
  Sunset: {
    description: 'RFC 8594, on every version 1 response: the IMF-fixdate after which version 1 answers 410.',
    schema: { type: 'string' },
  },
  'Idempotent-Replayed': {
    description:
      'true when this is the stored result of an earlier request with the same Idempotency-Key (contract §7).',
    schema: { type: 'string', enum: ['true'] },
  },
  'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 1 } },
  Allow: { description: 'The methods of this path.', schema: { type: 'string' } },
  'Accept-Patch': { description: 'The media types PATCH accepts.', schema: { type: 'string' } },
  'Accept-Encoding': {
    description:
      'RFC 7694: on a 415 for a request body sent with a Content-Encoding, the codings the service takes: identity.',
    schema: { type: 'string' },
  },
  'WWW-Authenticate': {
    description:
      'Bearer realm="orders" (plus error="invalid_token"), or Bearer error="insufficient_scope", scope="…" (RFC 6750).',
    schema: { type: 'string' },
  },
  'Access-Control-Allow-Origin': {
    description: 'With CORS_ORIGINS set, on every answer to a request whose Origin is listed: that origin (never *).',
    schema: { type: 'string' },
  },
  'Access-Control-Expose-Headers': {
    description:
      "With CORS_ORIGINS set, on every answer to a listed origin but a preflight's: the fields a script may read " +
      '(ETag, Location, Link, the rate-limit fields, Retry-After, Deprecation, Sunset, X-Request-Id, ' +
      'Idempotent-Replayed).',
    schema: { type: 'string' },
  },
  'Access-Control-Allow-Methods': {
    description: 'The answer to a CORS preflight from a listed origin: the methods of this path.',
    schema: { type: 'string' },
  },
  'Access-Control-Allow-Headers': {
    description:
      'The answer to a CORS preflight from a listed origin: the request fields a script may send (Authorization, ' +
      'Idempotency-Key, If-Match, If-None-Match among them).',
    schema: { type: 'string' },
  },
  'Access-Control-Max-Age': {
    description: 'The answer to a CORS preflight from a listed origin: seconds a browser may reuse it.',
    schema: { type: 'integer', minimum: 0 },
  },
};

/*
 * Which fields go on which response: what the pipeline (src/pipeline/pipeline.ts) adds to
 * every answer, errors included, and what each kind of answer adds. A new
 * route gets them all from its kind; it documents nothing of this itself.
 */
/** Every counted request's answer (RATE_LIMIT on, the default), whatever its status. */
const RATE_LIMIT_FIELDS = ['RateLimit', 'RateLimit-Policy'];
/** contract §8: every version 1 answer, once the path (its prefix) has been read. */
const VERSION_1_FIELDS = ['Deprecation', 'Sunset', 'Link'];
/** Refused while the body is read, before the path is routed: the version is not known yet. */
export const BEFORE_ROUTING: ReadonlySet<ProblemSlug> = new Set(['payload-too-large', 'request-timeout']);
/**
 * contract §16, with CORS_ORIGINS set: every answer varies by Origin, and one to
 * a listed origin carries these; a preflight's answer (Fetch §3.2.2) carries
 * `PREFLIGHT_FIELDS` instead of the exposed list.
 */
const CORS_FIELDS = ['Access-Control-Allow-Origin', 'Access-Control-Expose-Headers'];
export const PREFLIGHT_FIELDS = [
  'Access-Control-Allow-Origin',
  'Access-Control-Allow-Methods',
  'Access-Control-Allow-Headers',
  'Access-Control-Max-Age',
];
/** The fields a problem type carries beyond those of every problem. */
export const PROBLEM_FIELDS: Partial<Record<ProblemSlug, readonly string[]>> = {
  unauthorized: ['WWW-Authenticate'],
  // RFC 6750 §3.1: error="insufficient_scope" (a role refusal has none).
  forbidden: ['WWW-Authenticate'],
  'method-not-allowed': ['Allow'],
  'idempotency-key-in-use': ['Retry-After'],
  'rate-limited': ['Retry-After'],
  unavailable: ['Retry-After'],
};

/** The `headers` of a response object: each named field once, as a reference to its component. */
export function fields(names: Iterable<string>): Json {
  return Object.fromEntries([...new Set(names)].map((name) => [name, header(name)]));
}

/**
 * What the pipeline adds to an answer in `version`, errors included:
 * `routed` false for those refused before the path (so the version) is read.
 */
export function pipelineFields(version: Version | undefined, routed = true, limited = true): string[] {
  return [
    'X-Request-Id',
    ...(limited ? RATE_LIMIT_FIELDS : []),
    'Vary',
    ...CORS_FIELDS,
    ...(version === 1 && routed ? VERSION_1_FIELDS : []),
  ];
}
