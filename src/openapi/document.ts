/**
 * The OpenAPI 3.1 document, generated at start-up from the route table and
 * the valibot schemas (`schemas.ts`) that validate requests and describe
 * responses: never a second, hand-kept copy. Every route appears, under
 * `/v1` and `/v2` when it is versioned, with its parameters, bodies,
 * responses, problem types, headers and security.
 */
import { toJsonSchemaDefs } from '@valibot/to-json-schema';
import type { RouteDoc, RouteSpec, VersionedSchema } from '../app.ts';
import { SCOPES } from '../auth/tokens.ts';
import { MAX_PAGE_SIZE } from '../http/list-query.ts';
import { JSON_TYPE, VENDOR_TYPES, type Version } from '../http/negotiation.ts';
import { PROBLEM_CONTENT_TYPE, PROBLEM_TITLES, type ProblemSlug } from '../http/problem.ts';
import { SCHEMAS, type SchemaName } from './schemas.ts';

type Json = Record<string, unknown>;

export class OpenApiError extends Error {
  override name = 'OpenApiError';
}

const ref = (name: SchemaName) => ({ $ref: `#/components/schemas/${name}` });
const header = (name: string) => ({ $ref: `#/components/headers/${name}` });
const schemaFor = (schema: VersionedSchema, version: Version | undefined): SchemaName =>
  typeof schema === 'string' ? schema : version === 2 ? schema.v2 : schema.v1;

/** `/orders/{id:int}` → `/orders/{id}`. */
export function openApiPath(pattern: string): string {
  return pattern.replace(/\{([a-zA-Z]+)(?::int)?\}/g, '{$1}');
}

const HEADERS: Json = {
  ETag: { description: 'Strong, opaque entity tag of this representation (SPEC §9): of an order, from its revision, the API version and the media type; of anything else, from its exact bytes.', schema: { type: 'string' } },
  Location: { description: 'The created resource.', schema: { type: 'string' } },
  Link: { description: 'RFC 8288 links: first, prev, next, last of a collection; on version 1 also rel="successor-version".', schema: { type: 'string' } },
  'Cache-Control': { description: 'private, max-age for orders and items; public, max-age for products; no-store for users, payments and errors.', schema: { type: 'string' } },
  Vary: { description: 'Accept, and Authorization where the answer depends on the caller.', schema: { type: 'string' } },
  'X-Request-Id': { description: 'The request id: the one sent when it is 1–128 visible characters, else a generated one.', schema: { type: 'string' } },
  RateLimit: { description: 'draft-ietf-httpapi-ratelimit-headers: "default";r=<remaining>;t=<seconds to reset>. Absent when RATE_LIMIT=off.', schema: { type: 'string' } },
  'RateLimit-Policy': { description: 'draft-ietf-httpapi-ratelimit-headers: "default";q=<limit>;w=<window seconds>. Absent when RATE_LIMIT=off.', schema: { type: 'string' } },
  Deprecation: { description: 'RFC 9745, on every version 1 response: @<unix seconds>.', schema: { type: 'string' } },
  Sunset: { description: 'RFC 8594, on every version 1 response: the IMF-fixdate after which version 1 answers 410.', schema: { type: 'string' } },
  'Idempotent-Replayed': { description: 'true when this is the stored result of an earlier request with the same Idempotency-Key (SPEC §7).', schema: { type: 'string', enum: ['true'] } },
  'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 1 } },
  Allow: { description: 'The methods of this path.', schema: { type: 'string' } },
  'Accept-Patch': { description: 'The media types PATCH accepts.', schema: { type: 'string' } },
  'WWW-Authenticate': { description: 'Bearer realm="orders" (plus error="invalid_token"), or Bearer error="insufficient_scope", scope="…" (RFC 6750).', schema: { type: 'string' } },
};

function problemResponse(slugs: readonly ProblemSlug[], extraHeaders: readonly string[] = []): Json {
  const description = slugs.map((slug) => `\`/problems/${slug}\`: ${PROBLEM_TITLES[slug]}`).join('; ');
  return {
    description,
    headers: Object.fromEntries(['X-Request-Id', 'Cache-Control', ...extraHeaders].map((h) => [h, header(h)])),
    content: { [PROBLEM_CONTENT_TYPE]: { schema: ref('Problem') } },
  };
}

/** The refusals a route has by its kind (auth, version, body, list…), and its own. */
function problemsOf(route: RouteSpec, version: Version | undefined): Map<number, { slugs: ProblemSlug[]; headers: string[] }> {
  const problems = new Map<number, { slugs: ProblemSlug[]; headers: string[] }>();
  const add = (status: number, slug: ProblemSlug, headers: string[] = []) => {
    const entry = problems.get(status) ?? { slugs: [], headers: [] };
    if (!entry.slugs.includes(slug)) entry.slugs.push(slug);
    for (const h of headers) if (!entry.headers.includes(h)) entry.headers.push(h);
    problems.set(status, entry);
  };
  const doc: RouteDoc = route.doc;
  const safe = route.method === 'GET';
  if (doc.list || doc.query) add(400, 'invalid-query');
  if (safe || doc.ifMatch || route.method === 'POST') add(400, 'invalid-header');
  if (doc.body) add(400, 'malformed-json');
  if (route.method === 'POST' && route.idempotency === 'required') add(400, 'idempotency-key-missing');
  if (route.auth !== 'public') {
    add(401, 'unauthorized', ['WWW-Authenticate']);
    add(403, 'forbidden', ['WWW-Authenticate']);
  }
  if (route.pattern.includes('{')) add(404, 'not-found');
  add(405, 'method-not-allowed', ['Allow']);
  if (version !== undefined) add(406, 'not-acceptable');
  if (version === 1) add(410, 'version-sunset');
  add(413, 'payload-too-large');
  if (doc.body) add(415, 'unsupported-media-type', route.method === 'PATCH' ? ['Accept-Patch'] : []);
  if (route.method === 'POST') {
    add(409, 'idempotency-key-in-use', ['Retry-After']);
    add(422, 'idempotency-key-mismatch');
  }
  for (const [status, slug] of doc.problems ?? []) add(status, slug);
  add(429, 'rate-limited', ['Retry-After']);
  add(500, 'internal');
  if (route.pattern !== '/healthz' && route.pattern !== '/openapi.json') add(503, 'unavailable', ['Retry-After']);
  return problems;
}

function parameters(route: RouteSpec, method: string): Json[] {
  const params: Json[] = [];
  for (const match of route.pattern.matchAll(/\{([a-zA-Z]+)(:int)?\}/g)) {
    params.push({ name: match[1], in: 'path', required: true, schema: match[2] ? { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER } : { type: 'string' } });
  }
  const { list, query } = route.doc;
  if (list) {
    const keys = list.sortKeys.join('|');
    params.push(
      { name: 'page', in: 'query', description: 'Page number; a page past the last is empty.', schema: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER, default: 1 } },
      { name: 'pageSize', in: 'query', description: 'Items per page.', schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: 20 } },
      {
        name: 'sort', in: 'query',
        description: `Comma-separated sort keys (${list.sortKeys.join(', ')}), each at most once; -key descending; applied in the order given, then by id in the direction of the last key.`,
        schema: { type: 'string', pattern: `^-?(${keys})(,-?(${keys}))*$` },
      },
    );
    for (const filter of Object.keys(list.filters)) {
      if (query?.[filter] === undefined) throw new OpenApiError(`${route.method} ${route.pattern}: the filter ${filter} has no documentation`);
    }
  }
  for (const [name, documented] of Object.entries(query ?? {})) {
    params.push({ name, in: 'query', description: documented.description, schema: documented.schema });
  }
  if (method === 'get' || method === 'head') {
    params.push({ name: 'If-None-Match', in: 'header', description: 'Entity tags (or *): a match answers 304 (weak comparison).', schema: { type: 'string' } });
  }
  if (route.doc.ifMatch) {
    params.push({ name: 'If-Match', in: 'header', description: 'Entity tags (or *): the write happens only if the current tag matches (strong comparison), else 412.', schema: { type: 'string' } });
  }
  if (route.method === 'POST') {
    params.push({
      name: 'Idempotency-Key', in: 'header', required: route.idempotency === 'required',
      description: '1–255 visible ASCII characters, or a structured-field string. Kept 24 hours per user (SPEC §7).',
      schema: { type: 'string', minLength: 1, maxLength: 257 },
    });
  }
  return params;
}

function operation(route: RouteSpec, method: string, version: Version | undefined): Json {
  const { doc } = route;
  const common = ['X-Request-Id', 'RateLimit', 'RateLimit-Policy', 'Cache-Control', ...(version === 1 ? ['Deprecation', 'Sunset', 'Link'] : [])];
  const success: Json = { description: doc.summary };
  const headers = new Set(common);
  if (route.method === 'GET' || (doc.success.schema && doc.success.status !== 204)) headers.add('ETag');
  if (doc.success.status === 201) headers.add('Location');
  if (doc.list || doc.query) headers.add('Link');
  if (route.method === 'POST') headers.add('Idempotent-Replayed');
  if (version !== undefined || route.auth !== 'public') headers.add('Vary');
  success.headers = Object.fromEntries([...headers].map((h) => [h, header(h)]));
  if (doc.success.schema && method !== 'head') {
    const schema = ref(schemaFor(doc.success.schema, version));
    const types = version === undefined ? [JSON_TYPE] : [JSON_TYPE, VENDOR_TYPES[version]];
    success.content = Object.fromEntries(types.map((t) => [t, { schema }]));
  }
  const responses: Json = { [String(doc.success.status)]: success };
  if (route.method === 'GET') responses['304'] = { description: 'Not modified: If-None-Match matched.', headers: Object.fromEntries(['ETag', 'Cache-Control', 'Vary', 'X-Request-Id'].map((h) => [h, header(h)])) };
  for (const [status, { slugs, headers: extra }] of [...problemsOf(route, version)].sort(([a], [b]) => a - b)) {
    responses[String(status)] = problemResponse(slugs, extra);
  }
  const op: Json = {
    operationId: `${method}${version ? `V${version}` : ''}${openApiPath(route.pattern).replace(/[{}]/g, '').split(/[/-]/).map((p) => (p ? p[0]!.toUpperCase() + p.slice(1) : '')).join('')}`,
    summary: doc.summary,
    ...(doc.description ? { description: doc.description } : {}),
    tags: [version === undefined ? 'service' : `v${version}`],
    ...(version === 1 ? { deprecated: true } : {}),
    parameters: parameters(route, method),
    responses,
    security: route.auth === 'public' ? [] : [{ bearer: [route.auth] }],
  };
  if (doc.body && method !== 'head') {
    const schema = ref(schemaFor(doc.body, version));
    const types = [JSON_TYPE, ...(version === undefined ? [] : [VENDOR_TYPES[version]]), ...(route.method === 'PATCH' ? ['application/merge-patch+json'] : [])];
    op.requestBody = { required: true, content: Object.fromEntries(types.map((t) => [t, { schema }])) };
  }
  return op;
}

/** Builds the document for `routes`. */
export function buildOpenApi(routes: readonly RouteSpec[]): Json {
  const paths: Record<string, Json> = {};
  for (const route of routes) {
    const versions: (Version | undefined)[] = route.versioned === false ? [undefined] : [1, 2];
    for (const version of versions) {
      const path = `${version ? `/v${version}` : ''}${openApiPath(route.pattern)}`;
      const item = (paths[path] ??= {});
      const method = route.method.toLowerCase();
      item[method] = operation(route, method, version);
      if (route.method === 'GET') item.head = operation(route, 'head', version);
    }
  }
  const schemas = toJsonSchemaDefs(SCHEMAS, {
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
        'Every resource path is served under /v1 (deprecated) and /v2 (current). The same paths without a prefix are served as v1,',
        'or as the version of the vendor media type in Accept (application/vnd.orders.v1+json, application/vnd.orders.v2+json).',
        'Errors are RFC 9457 problem details. OPTIONS on any path answers 204 with Allow.',
      ].join(' '),
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
