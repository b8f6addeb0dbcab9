/**
 * The OpenAPI 3.1 document, generated at start-up from the route table and
 * the valibot schemas its routes name (`named()` of `atoms.ts`, beside each
 * representation and request body) that validate requests and describe
 * responses: never a second, hand-kept copy. Every route appears, under
 * `/v1` and `/v2` when it is versioned, with its parameters, bodies,
 * responses, problem types, headers and security, and every path with its
 * OPTIONS. Each response lists every field the service may send on it
 * (test/openapi-headers.test.ts compares them with the wire), and the
 * document lints clean under Redocly's recommended rules
 * (test/openapi-lint.test.ts).
 *
 * A route provides only its own facts in `doc`: a summary and a
 * description (required: `buildOpenApi()` throws without one), its success
 * status and schema, body, list rules, query parameters, `ifMatch` and its
 * own problems. Everything that follows from its kind (auth, version,
 * method, body) and from the pipeline is added here, for every route alike.
 */
import { toJsonSchemaDefs } from '@valibot/to-json-schema';
import type * as v from 'valibot';
import type { DocumentedRoute, NamedSchema, RouteDoc, VersionedSchema } from './types.ts';
import { ID_SCHEMA, Problem } from './atoms.ts';
import { SCOPES } from '../auth/tokens.ts';
import { DEFAULT_PAGE_SIZE, MAX_CURSOR_LENGTH, MAX_PAGE_DEPTH, MAX_PAGE_SIZE, maxPage } from '../http/list-query.ts';
import { JSON_TYPE, VENDOR_TYPES, type Version } from '../http/negotiation.ts';
import { isStored } from '../http/idempotency-key.ts';
import { PROBLEM_CONTENT_TYPE, PROBLEM_TITLES, type ProblemSlug } from '../http/problem.ts';

type Json = Record<string, unknown>;

export class OpenApiError extends Error {
  override name = 'OpenApiError';
}

const ref = (schema: NamedSchema) => ({ $ref: `#/components/schemas/${schema.name}` });
const header = (name: string) => ({ $ref: `#/components/headers/${name}` });
const schemaFor = (schema: VersionedSchema, version: Version | undefined): NamedSchema =>
  'name' in schema ? schema : version === 2 ? schema.v2 : schema.v1;

/**
 * `components.schemas`: the named schemas of the routes' successes and
 * bodies, the named schemas inside them, and the problem details. One name
 * is one schema: two different schemas under one name are a mistake.
 */
function namedSchemas(routes: readonly DocumentedRoute[]): Record<string, v.GenericSchema> {
  const schemas = new Map<string, v.GenericSchema>();
  const add = (named: NamedSchema): void => {
    const known = schemas.get(named.name);
    if (known === named.schema) return;
    if (known !== undefined) throw new OpenApiError(`two different schemas are named ${named.name}`);
    schemas.set(named.name, named.schema);
    named.refs.forEach(add);
  };
  const addVersioned = (schema: VersionedSchema | undefined): void => {
    if (schema === undefined) return;
    if ('name' in schema) add(schema);
    else {
      add(schema.v1);
      add(schema.v2);
    }
  };
  add(Problem);
  for (const route of routes) {
    addVersioned(route.doc.success.schema);
    addVersioned(route.doc.body);
  }
  return Object.fromEntries(schemas);
}

/**
 * The API's licence: none is granted (package.json: UNLICENSED). An SPDX
 * `LicenseRef-` names it, as OpenAPI 3.1's `identifier` asks for an SPDX
 * expression and SPDX has no identifier for "no licence".
 */
export const LICENSE = {
  name: 'Proprietary: no licence is granted (UNLICENSED)',
  identifier: 'LicenseRef-UNLICENSED',
} as const;

/** `/orders/{id:int}` → `/orders/{id}`. */
export function openApiPath(pattern: string): string {
  return pattern.replace(/\{([a-zA-Z]+)(?::int)?\}/g, '{$1}');
}

const HEADERS: Json = {
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
const BEFORE_ROUTING: ReadonlySet<ProblemSlug> = new Set(['payload-too-large', 'request-timeout']);
/**
 * contract §16, with CORS_ORIGINS set: every answer varies by Origin, and one to
 * a listed origin carries these; a preflight's answer (Fetch §3.2.2) carries
 * `PREFLIGHT_FIELDS` instead of the exposed list.
 */
const CORS_FIELDS = ['Access-Control-Allow-Origin', 'Access-Control-Expose-Headers'];
const PREFLIGHT_FIELDS = [
  'Access-Control-Allow-Origin',
  'Access-Control-Allow-Methods',
  'Access-Control-Allow-Headers',
  'Access-Control-Max-Age',
];
/** The fields a problem type carries beyond those of every problem. */
const PROBLEM_FIELDS: Partial<Record<ProblemSlug, readonly string[]>> = {
  unauthorized: ['WWW-Authenticate'],
  // RFC 6750 §3.1: error="insufficient_scope" (a role refusal has none).
  forbidden: ['WWW-Authenticate'],
  'method-not-allowed': ['Allow'],
  'idempotency-key-in-use': ['Retry-After'],
  'rate-limited': ['Retry-After'],
  unavailable: ['Retry-After'],
};

/** The `headers` of a response object: each named field once, as a reference to its component. */
function fields(names: Iterable<string>): Json {
  return Object.fromEntries([...new Set(names)].map((name) => [name, header(name)]));
}

/**
 * What the pipeline adds to an answer in `version`, errors included:
 * `routed` false for those refused before the path (so the version) is read.
 */
function pipelineFields(version: Version | undefined, routed = true, limited = true): string[] {
  return [
    'X-Request-Id',
    ...(limited ? RATE_LIMIT_FIELDS : []),
    'Vary',
    ...CORS_FIELDS,
    ...(version === 1 && routed ? VERSION_1_FIELDS : []),
  ];
}

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

/** The parameters of the path of `pattern`: `{id:int}` an integer id, `{name}` a string. */
function pathParameters(pattern: string): Json[] {
  return [...pattern.matchAll(/\{([a-zA-Z]+)(:int)?\}/g)].map((match) => ({
    name: match[1],
    in: 'path',
    required: true,
    schema: match[2] ? { ...ID_SCHEMA } : { type: 'string' },
  }));
}

function parameters(route: DocumentedRoute, method: string): Json[] {
  const params = pathParameters(route.pattern);
  const { list, query } = route.doc;
  if (list) {
    const keys = list.sortKeys.join('|');
    params.push(
      {
        name: 'page',
        in: 'query',
        description:
          `Page number; a page past the last is empty. Reaches at most ${MAX_PAGE_DEPTH} rows deep: (page - 1) × ` +
          `pageSize must be below ${MAX_PAGE_DEPTH} (so at most ${MAX_PAGE_DEPTH} with pageSize 1, ` +
          `${maxPage(DEFAULT_PAGE_SIZE)} with the default ${DEFAULT_PAGE_SIZE}); deeper is 400 invalid-query: ` +
          "follow the next link's cursor instead. Not with cursor.",
        schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_DEPTH, default: 1 },
      },
      {
        name: 'pageSize',
        in: 'query',
        description: 'Items per page.',
        schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: 20 },
      },
      {
        name: 'sort',
        in: 'query',
        description:
          `Comma-separated sort keys (${list.sortKeys.join(', ')}), each at most once; -key descending; applied in ` +
          'the order given, then by id in the direction of the last key.',
        schema: { type: 'string', pattern: `^-?(${keys})(,-?(${keys}))*$` },
      },
      {
        name: 'cursor',
        in: 'query',
        description:
          'Opaque: the page after the position it holds, as the next link (Link rel="next", meta.next) gives it. ' +
          'Valid only with the filters and sort it was made for (pageSize may change), and not with page; ' +
          'otherwise 400 invalid-query. A cursor page has no page number (meta.page is absent).',
        schema: { type: 'string', minLength: 1, maxLength: MAX_CURSOR_LENGTH, pattern: '^[A-Za-z0-9_-]+$' },
      },
    );
    for (const filter of Object.keys(list.filters)) {
      if (query?.[filter] === undefined)
        throw new OpenApiError(`${route.method} ${route.pattern}: the filter ${filter} has no documentation`);
    }
  }
  for (const [name, documented] of Object.entries(query ?? {})) {
    params.push({ name, in: 'query', description: documented.description, schema: documented.schema });
  }
  if (method === 'get' || method === 'head') {
    params.push({
      name: 'If-None-Match',
      in: 'header',
      description: 'Entity tags (or *): a match answers 304 (weak comparison).',
      schema: { type: 'string' },
    });
  }
  if (route.doc.ifMatch) {
    params.push({
      name: 'If-Match',
      in: 'header',
      description:
        'Entity tags (or *): the write happens only if the current tag matches (strong comparison), else 412.',
      schema: { type: 'string' },
    });
  }
  if (route.method === 'POST') {
    params.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: route.idempotency === 'required',
      description:
        '1–255 visible ASCII characters, or a structured-field string. Kept 24 hours per user (contract §7).',
      schema: { type: 'string', minLength: 1, maxLength: 257 },
    });
  }
  return params;
}

function operationId(method: string, version: Version | undefined, pattern: string): string {
  const words = openApiPath(pattern)
    .replace(/[{}]/g, '')
    .split(/[/-]/)
    .map((p) => (p ? p[0]!.toUpperCase() + p.slice(1) : ''));
  return `${method}${version ? `V${version}` : ''}${words.join('')}`;
}

function operation(route: DocumentedRoute, method: string, version: Version | undefined): Json {
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
function optionsOperation(pattern: string, version: Version | undefined, patchable: boolean): Json {
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

/** Builds the document for `routes`; throws `OpenApiError` when a route's documentation is incomplete. */
export function buildOpenApi(routes: readonly DocumentedRoute[]): Json {
  const paths: Record<string, Json> = {};
  const patterns = new Map<string, { pattern: string; version: Version | undefined }>();
  for (const route of routes) {
    const versions: (Version | undefined)[] = route.versioned === false ? [undefined] : [1, 2];
    for (const version of versions) {
      const path = `${version ? `/v${version}` : ''}${openApiPath(route.pattern)}`;
      const item = paths[path] ?? {};
      paths[path] = item;
      const method = route.method.toLowerCase();
      item[method] = operation(route, method, version);
      if (route.method === 'GET') item.head = operation(route, 'head', version);
      patterns.set(path, { pattern: route.pattern, version });
    }
  }
  for (const [path, { pattern, version }] of patterns) {
    const item = paths[path] as Json;
    item.options = optionsOperation(pattern, version, item.patch !== undefined);
  }
  const schemas = toJsonSchemaDefs(namedSchemas(routes), {
    target: 'draft-2020-12',
    errorMode: 'ignore',
    overrideRef: (context) => `#/components/schemas/${context.referenceId}`,
  });
  return {
    openapi: '3.1.0',
    info: {
      title: 'Orders service',
      version: '2.0.0',
      summary: 'Orders, order items, users, payments and a product catalog.',
      description: [
        'Every resource path is served under /v1 (deprecated) and /v2 (current). The same paths without a prefix ' +
          'are served as v1,',
        'or as the version of the vendor media type in Accept (application/vnd.orders.v1+json, ' +
          'application/vnd.orders.v2+json).',
        'Errors are RFC 9457 problem details. OPTIONS on any path answers 204 with Allow.',
        'Every response lists the fields it may carry: X-Request-Id and the rate-limit fields on every one ' +
          '(RATE_LIMIT on, the default),',
        'Deprecation, Sunset and a successor-version Link on version 1, and the CORS fields once CORS_ORIGINS is set.',
      ].join(' '),
      // package.json says UNLICENSED: no licence is granted, and the document says so rather than naming one.
      license: LICENSE,
    },
    servers: [{ url: '/' }],
    tags: [
      { name: 'v2', description: 'Version 2 (current): money as {"amount": "59.90", "currency": "EUR"}.' },
      { name: 'v1', description: 'Version 1 (deprecated): money as a JSON number with a currency field.' },
      { name: 'service', description: 'Health, readiness and this document; no version.' },
    ],
    paths,
    components: {
      schemas,
      headers: HEADERS,
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'ord_ + 43 base64url characters',
          description: `Opaque tokens with scopes: ${SCOPES.join(', ')}. Each operation lists the scope it needs.`,
        },
      },
    },
  };
}
