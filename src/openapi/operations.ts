/**
 * One operation of the document: what its route says of itself in `doc`, and all that follows from its kind
 * (auth, version, method, body) and from the pipeline. OPTIONS, answered by the pipeline on every path, has its own.
 */
import { JSON_TYPE, VENDOR_TYPES, type Version } from '../http/negotiation.ts';
import { isStored } from '../http/idempotency-key.ts';
import type { ProblemSlug } from '../http/problem.ts';
import type { Components } from './components.ts';
import { OpenApiError } from './errors.ts';
import { openApiPath, parameters, pathParameters, requestIdParameter } from './parameters.ts';
import { always, type Field, fields, pipelineFields, sometimes } from './response-fields.ts';
import { notModifiedResponse, optionsResponse, problemResponse } from './responses.ts';
import type { DocumentedRoute, NamedSchema, RouteDoc, VersionedSchema } from './types.ts';

type Json = Record<string, unknown>;

const ref = (schema: NamedSchema) => ({ $ref: `#/components/schemas/${schema.name}` });
const schemaFor = (schema: VersionedSchema, version: Version | undefined): NamedSchema =>
  'name' in schema ? schema : version === 2 ? schema.v2 : schema.v1;

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
  // contract §11: a body is read (and refused) only on a route that takes one, once it is routed and allowed.
  if (!safe) add(408, 'request-timeout');
  if (version === 1) add(410, 'version-sunset');
  if (!safe) add(413, 'payload-too-large');
  if (doc.body) add(415, 'unsupported-media-type');
  if (route.method === 'POST') {
    add(409, 'idempotency-key-in-use');
    add(422, 'idempotency-key-mismatch');
  }
  for (const [status, slug] of doc.problems ?? []) add(status, slug);
  if (route.rateLimited !== 'never') add(429, 'rate-limited');
  add(500, 'internal');
  // The database unreachable, or the process overloaded (contract §14): all but liveness, which is never refused.
  if (route.pattern !== '/healthz') add(503, 'unavailable');
  // contract §17: a write sent to the database and not answered.
  if (!safe && route.method !== 'OPTIONS') add(503, 'outcome-unknown');
  return problems;
}

function operationId(method: string, version: Version | undefined, pattern: string): string {
  const words = openApiPath(pattern)
    .replace(/[{}]/g, '')
    .split(/[/-]/)
    .map((p) => (p ? p[0]!.toUpperCase() + p.slice(1) : ''));
  return `${method}${version ? `V${version}` : ''}${words.join('')}`;
}

/** The body of `route`'s success in `version`, by media type: its own types first, then JSON. */
function successContent(route: DocumentedRoute, version: Version | undefined): Json | undefined {
  const { media, schema } = route.doc.success;
  const content: Json = {};
  for (const [type, typeSchema] of Object.entries(media ?? {})) content[type] = { schema: typeSchema };
  if (schema) {
    const named = ref(schemaFor(schema, version));
    for (const type of version === undefined ? [JSON_TYPE] : [JSON_TYPE, VENDOR_TYPES[version]])
      content[type] = { schema: named };
  }
  return Object.keys(content).length === 0 ? undefined : content;
}

/** The success of `route` for `method` (`head` for a GET's HEAD: its fields, without the body). */
function success(route: DocumentedRoute, method: string, version: Version | undefined, components: Components): Json {
  const { doc } = route;
  const list: Field[] = [...always('Cache-Control'), ...pipelineFields(version, route.rateLimited !== 'never')];
  const content = successContent(route, version);
  // Vary: Accept where the route negotiates, Authorization where it authenticates, on every answer it routes (the
  // fields stage); Accept-Encoding on every answer with content (the compression stage).
  if (content !== undefined || route.versioned !== false || route.auth !== 'public') list.push(...always('Vary'));
  if (doc.success.status !== 204) list.push(...always('ETag'));
  if (doc.success.status === 201) list.push(...always('Location'));
  if (doc.list || doc.query) list.push(...always('Link'));
  if (route.method === 'POST' && route.auth !== 'public') list.push(...sometimes('Idempotent-Replayed'));
  for (const [name, onEvery] of Object.entries(doc.success.fields ?? {}))
    list.push(...(onEvery ? always(name) : sometimes(name)));
  if (content !== undefined) list.push(...sometimes('Content-Encoding'));
  const ok: Json = { description: doc.summary, headers: fields(list, components) };
  if (content !== undefined && method !== 'head') ok.content = content;
  return ok;
}

/** The operation of `route` for `method` (`head` for a GET's HEAD) in `version` (none: unversioned). */
export function operation(
  route: DocumentedRoute,
  method: string,
  version: Version | undefined,
  components: Components,
): Json {
  const { doc } = route;
  // contract §16: every operation says what it does beyond its summary; a route without it is a mistake at start-up.
  if (!doc.description?.trim())
    throw new OpenApiError(`${route.method} ${route.pattern}: doc.description is missing (every operation needs one)`);
  const keyed = route.method === 'POST' && route.auth !== 'public';
  const limited = route.rateLimited !== 'never';
  const responses: Json = { [String(doc.success.status)]: success(route, method, version, components) };
  if (route.method === 'GET') responses['304'] = notModifiedResponse(version, limited, components);
  const own = new Set((doc.problems ?? []).map(([status]) => status));
  for (const [status, slugs] of [...problemsOf(route, version)].sort(([a], [b]) => a - b)) {
    // contract §7: a keyed POST's own refusals (409, 422) are stored, and replayed as they were.
    const replayable = keyed && own.has(status) && isStored(status);
    const facts = { version, limited, patch: route.method === 'PATCH', replayable };
    responses[String(status)] = problemResponse(status, slugs, facts, components);
  }
  const op: Json = {
    operationId: operationId(method, version, route.pattern),
    summary: doc.summary,
    description: doc.description,
    tags: [version === undefined ? 'service' : `v${version}`],
    ...(version === 1 ? { deprecated: true } : {}),
    parameters: parameters(route, method, components),
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
    const example = doc.bodyExample === undefined ? {} : { example: doc.bodyExample };
    op.requestBody = { required: true, content: Object.fromEntries(types.map((t) => [t, { schema, ...example }])) };
  }
  return op;
}

/**
 * OPTIONS on the path of `route` (RFC 9110 §9.3.7): answered without a token and before negotiation, so it can
 * only be refused while its body is read, for the rate limit, or by a bug.
 */
export function optionsOperation(
  route: DocumentedRoute,
  version: Version | undefined,
  patchable: boolean,
  components: Components,
): Json {
  const facts = { version, limited: true, patch: false, replayable: false };
  const problem = (status: number, slug: ProblemSlug) => problemResponse(status, [slug], facts, components);
  return {
    operationId: operationId('options', version, route.pattern),
    summary: 'The methods of this path',
    description: [
      `204 with Allow${patchable ? ', and Accept-Patch with the media types PATCH takes' : ''}; no token needed.`,
      'With CORS_ORIGINS set, a CORS preflight from a listed origin also gets Access-Control-Allow-Origin, ' +
        '-Allow-Methods, -Allow-Headers and -Max-Age,',
      'and is not counted against the rate limit (docs/operations.md).',
    ].join(' '),
    tags: [version === undefined ? 'service' : `v${version}`],
    ...(version === 1 ? { deprecated: true } : {}),
    parameters: [...pathParameters(route, components), requestIdParameter(components)],
    responses: {
      '204': optionsResponse(version, patchable, components),
      '429': problem(429, 'rate-limited'),
      '500': problem(500, 'internal'),
    },
    security: [],
  };
}
