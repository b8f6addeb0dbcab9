/**
 * The fields of the document's responses: which go on which kind of answer, and which every such answer carries
 * (`required`), each a `$ref` to `components.headers` (`X`, or `X.required`; headers.ts says what it means).
 * "Always" is said of the default configuration, which the document describes: RATE_LIMIT on, CORS_ORIGINS and
 * METRICS_TOKEN unset. A new route gets the pipeline's fields from its kind; it documents none of them itself.
 */
import type { Version } from '../http/negotiation.ts';
import type { ProblemSlug } from '../http/problem.ts';
import type { Components } from './components.ts';
import { OpenApiError } from './errors.ts';
import { HEADERS } from './headers.ts';

type Json = Record<string, unknown>;

/** A field of a response: its name, and whether every such answer carries it. */
export interface Field {
  readonly name: string;
  readonly required: boolean;
}

/** Fields on every such answer. */
export const always = (...names: string[]): Field[] => names.map((name) => ({ name, required: true }));
/** Fields on some such answers. */
export const sometimes = (...names: string[]): Field[] => names.map((name) => ({ name, required: false }));

/** Every counted request's answer, whatever its status. */
const RATE_LIMIT_FIELDS = ['RateLimit', 'RateLimit-Policy'];
/** contract §8: every version 1 answer, once the path (its prefix) has been read. */
const VERSION_1_FIELDS = ['Deprecation', 'Sunset', 'Link'];
/** Refused before a route is found: counted against the client's address whatever the path, a health check's too. */
export const BEFORE_ROUTE: ReadonlySet<ProblemSlug> = new Set(['method-not-allowed']);
/**
 * contract §16, with CORS_ORIGINS set: on an answer to a listed origin (every answer varies by Origin); a
 * preflight's answer (Fetch §3.2.2) carries `PREFLIGHT_FIELDS` instead.
 */
const CORS_FIELDS = ['Access-Control-Allow-Origin', 'Access-Control-Expose-Headers'];
export const PREFLIGHT_FIELDS: readonly Field[] = sometimes(
  'Access-Control-Allow-Origin',
  'Access-Control-Allow-Methods',
  'Access-Control-Allow-Headers',
  'Access-Control-Max-Age',
);
/** The fields a problem type carries beyond those of every problem. */
export const PROBLEM_FIELDS: Partial<Record<ProblemSlug, readonly Field[]>> = {
  unauthorized: always('WWW-Authenticate'),
  // RFC 6750 §3.1: error="insufficient_scope" on a missing scope (a role refusal has none).
  forbidden: sometimes('WWW-Authenticate'),
  'method-not-allowed': always('Allow'),
  'idempotency-key-in-use': always('Retry-After'),
  'rate-limited': always('Retry-After'),
  unavailable: always('Retry-After'),
  'outcome-unknown': always('Retry-After'),
  // contract §4: a coded request body is refused before its media type is looked at.
  'unsupported-media-type': sometimes('Accept-Encoding'),
};

/** What the pipeline adds to an answer in `version`, errors included; `limited` false for health checks. */
export function pipelineFields(version: Version | undefined, limited = true): Field[] {
  return [
    ...always('X-Request-Id'),
    ...(limited ? always(...RATE_LIMIT_FIELDS) : []),
    ...sometimes('Vary', ...CORS_FIELDS),
    ...(version === 1 ? always(...VERSION_1_FIELDS) : []),
  ];
}

/** The `headers` of a response: each field once, in order, `required` when any mention of it says so. */
export function fields(list: Iterable<Field>, components: Components): Json {
  const required = new Map<string, boolean>();
  for (const field of list) required.set(field.name, (required.get(field.name) ?? false) || field.required);
  return Object.fromEntries([...required].map(([name, always]) => [name, fieldRef(name, always, components)]));
}

function fieldRef(name: string, required: boolean, components: Components): Json {
  const header = HEADERS[name];
  if (header === undefined) throw new OpenApiError(`${name} is not a field the document describes (headers.ts)`);
  return required
    ? components.ref('headers', `${name}.required`, { ...header, required: true })
    : components.ref('headers', name, header);
}
