/**
 * One operation of the document: what its route says of itself in `doc`,
 * and everything that follows from its kind (auth, version, method, body)
 * and from the pipeline: its responses, their fields and problem types, its
 * parameters and security. OPTIONS, which the pipeline answers on every
 * path, has its own.
 */
import { JSON_TYPE, VENDOR_TYPES, type Version } from '../http/negotiation.ts';
import { isStored } from '../http/idempotency-key.ts';
import { PROBLEM_CONTENT_TYPE, PROBLEM_TITLES, type ProblemSlug } from '../http/problem.ts';
import { Problem } from './atoms.ts';
import { OpenApiError } from './errors.ts';
import { openApiPath, parameters, pathParameters } from './parameters.ts';
import { BEFORE_ROUTING, fields, pipelineFields, PREFLIGHT_FIELDS, PROBLEM_FIELDS } from './response-fields.ts';
import type { DocumentedRoute, NamedSchema, RouteDoc, VersionedSchema } from './types.ts';

type Json = Record<string, unknown>;

const ref = (schema: NamedSchema) => ({ $ref: `#/components/schemas/${schema.name}` });
const schemaFor = (schema: VersionedSchema, version: Version | undefined): NamedSchema =>
  'name' in schema ? schema : version === 2 ? schema.v2 : schema.v1;

/** The response of a status whose problem types are `slugs`; `replayable` when it is stored under a key. */
function problemResponse(
  route: DocumentedRoute | undefined,
  version: Version | undefined,
  slugs: readonly ProblemSlug[],
  replayable: boolean,
): Json {
  const description = slugs.map((slug) => `\`/problems/${slug}\`: ${PROBLEM_TITLES[slug]}`).join('; ');
  const names = ['Cache-Control'];
  for (const slug of slugs) {
    const routed = !BEFORE_ROUTING.has(slug);
    // Refused before routing, a health check is counted like any request: its route is not known yet.
    const limited = !routed || route?.rateLimited !== 'never';
    names.push(...pipelineFields(version, routed, limited), ...(PROBLEM_FIELDS[slug] ?? []));
    if (slug === 'unsupported-media-type' && route?.method === 'PATCH') names.push('Accept-Patch');
    // contract §4: a coded request body is refused before its media type is looked at.
    if (slug === 'unsupported-media-type') names.push('Accept-Encoding');
  }
  if (replayable) names.push('Idempotent-Replayed');
  return {
    description,
    headers: fields(['X-Request-Id', ...names]),
    content: { [PROBLEM_CONTENT_TYPE]: { schema: ref(Problem) } },
  };
}

/** The refusals a route has by its kind (auth, version, body, list…), and its own. */
function problemsOf(route: DocumentedRoute, version: Version | undefined): Map<number, ProblemSlug[]> {
  const problems = new Map<number, ProblemSlug[]>();
  const add = (status: number, slug: ProblemSlug) => {
    const slugs = problems.get(status) ?? [];
    if (!slugs.includes(slug)) slugs.push(slug);
    problems.set(status, slugs);
  };
  const doc: RouteDoc = route.doc;
  const safe = route.method === 'GET';
  if (doc.list || doc.query) add(400, 'invalid-query');
  if (safe || doc.ifMatch || route.method === 'POST') add(400, 'invalid-header');
  if (doc.body) add(400, 'malformed-json');
  if (route.method === 'POST' && route.idempotency === 'required') add(400, 'idempotency-key-missing');
  if (route.auth !== 'public') {
    add(401, 'unauthorized');
    add(403, 'forbidden');
  }
  if (route.pattern.includes('{')) add(404, 'not-found');
  add(405, 'method-not-allowed');
  // contract §4: a success with no body (204) is never refused for its Accept.
  if (version !== undefined && doc.success.status !== 204) add(406, 'not-acceptable');
  add(408, 'request-timeout');
  if (version === 1) add(410, 'version-sunset');
  add(413, 'payload-too-large');
  if (doc.body) add(415, 'unsupported-media-type');
  if (route.method === 'POST') {
    add(409, 'idempotency-key-in-use');
    add(422, 'idempotency-key-mismatch');
  }
  for (const [status, slug] of doc.problems ?? []) add(status, slug);
  if (route.rateLimited !== 'never') add(429, 'rate-limited');
  add(500, 'internal');
  if (route.pattern !== '/healthz' && route.pattern !== '/openapi.json') add(503, 'unavailable');
  return problems;
}

function operationId(method: string, version: Version | undefined, pattern: string): string {
  const words = openApiPath(pattern)
    .replace(/[{}]/g, '')
    .split(/[/-]/)
    .map((p) => (p ? p[0]!.toUpperCase() + p.slice(1) : ''));
  return `${method}${version ? `V${version}` : ''}${words.join('')}`;
}

/** The operation of `route` for `method` (`head` for a GET's HEAD) in `version` (none: unversioned). */
export function operation(route: DocumentedRoute, method: string, version: Version | undefined): Json {
  const { doc } = route;
  // contract §16: every operation says what it does beyond its summary; a route without it is a mistake at start-up.
  if (!doc.description?.trim())
    throw new OpenApiError(`${route.method} ${route.pattern}: doc.description is missing (every operation needs one)`);
  const keyed = route.method === 'POST' && route.auth !== 'public';
  const limited = route.rateLimited !== 'never';
  const success = ['Cache-Control', ...pipelineFields(version, true, limited)];
  if (doc.success.status !== 204) success.push('ETag');
  if (doc.success.status === 201) success.push('Location');
  if (doc.list || doc.query) success.push('Link');
  if (keyed) success.push('Idempotent-Replayed');
  const ok: Json = { description: doc.summary, headers: fields(success) };
  if (doc.success.schema && method !== 'head') {
    const schema = ref(schemaFor(doc.success.schema, version));
    const types = version === undefined ? [JSON_TYPE] : [JSON_TYPE, VENDOR_TYPES[version]];
    ok.content = Object.fromEntries(types.map((t) => [t, { schema }]));
  }
  const responses: Json = { [String(doc.success.status)]: ok };
  if (route.method === 'GET') {
    // RFC 9110 §15.4.5: the 200's ETag, Cache-Control and Vary, and what the pipeline adds to every answer.
    responses['304'] = {
      description: 'Not modified: If-None-Match matched.',
      headers: fields(['ETag', 'Cache-Control', ...pipelineFields(version, true, limited)]),
    };
  }
  const own = new Set((doc.problems ?? []).map(([status]) => status));
  for (const [status, slugs] of [...problemsOf(route, version)].sort(([a], [b]) => a - b)) {
    // contract §7: a keyed POST's own refusals (409, 422) are stored, and replayed as they were.
    responses[String(status)] = problemResponse(route, version, slugs, keyed && own.has(status) && isStored(status));
  }
  const op: Json = {
    operationId: operationId(method, version, route.pattern),
    summary: doc.summary,
    description: doc.description,
    tags: [version === undefined ? 'service' : `v${version}`],
    ...(version === 1 ? { deprecated: true } : {}),
    parameters: parameters(route, method),
    responses,
    security: route.auth === 'public' ? [] : [{ bearer: [route.auth] }],
  };
  if (doc.body && method !== 'head') {
    const schema = ref(schemaFor(doc.body, version));
    const types = [
      JSON_TYPE,
      ...(version === undefined ? [] : [VENDOR_TYPES[version]]),
      ...(route.method === 'PATCH' ? ['application/merge-patch+json'] : []),
    ];
    op.requestBody = { required: true, content: Object.fromEntries(types.map((t) => [t, { schema }])) };
  }
  return op;
}

/**
 * OPTIONS on a path (RFC 9110 §9.3.7): answered by the pipeline for every
 * path, without a token and before negotiation, so it can only be refused
 * while its body is read, for the rate limit, or by a bug.
 */
export function optionsOperation(pattern: string, version: Version | undefined, patchable: boolean): Json {
  const problem = (slug: ProblemSlug) => problemResponse(undefined, version, [slug], false);
  return {
    operationId: operationId('options', version, pattern),
    summary: 'The methods of this path',
    description: [
      `204 with Allow${patchable ? ', and Accept-Patch with the media types PATCH takes' : ''}; no token needed.`,
      'With CORS_ORIGINS set, a CORS preflight from a listed origin also gets Access-Control-Allow-Origin, ' +
        '-Allow-Methods, -Allow-Headers and -Max-Age,',
      'and is not counted against the rate limit (docs/operations.md).',
    ].join(' '),
    tags: [version === undefined ? 'service' : `v${version}`],
    ...(version === 1 ? { deprecated: true } : {}),
    parameters: pathParameters(pattern),
    responses: {
      '204': {
        description: 'The methods of this path, in Allow.',
        headers: fields([
          'Allow',
          ...(patchable ? ['Accept-Patch'] : []),
          ...pipelineFields(version),
          ...PREFLIGHT_FIELDS,
        ]),
      },
      '408': problem('request-timeout'),
      '413': problem('payload-too-large'),
      '429': problem('rate-limited'),
      '500': problem('internal'),
    },
    security: [],
  };
}
