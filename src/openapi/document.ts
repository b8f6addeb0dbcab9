/**
 * The OpenAPI 3.1 document, generated at start-up from the route table and the valibot schemas that validate
 * requests and describe responses: never a second, hand-kept copy. Every route appears, under `/v1` and `/v2` when
 * versioned, and every path with its OPTIONS. Each response lists every field the service may send on it
 * (test/openapi/headers.test.ts compares them with the wire), and the document lints clean under Redocly's
 * recommended rules (test/openapi/lint.test.ts).
 *
 * A route provides only its own facts in `doc` (types.ts); what follows from its kind and from the pipeline is
 * added by `operation()` (operations.ts), for every route alike.
 */
import { toJsonSchemaDefs } from '@valibot/to-json-schema';
import type * as v from 'valibot';
import type { DocumentedRoute, NamedSchema, VersionedSchema } from './types.ts';
import { SCOPES } from '../auth/tokens.ts';
import type { Version } from '../http/negotiation.ts';
import { Problem } from './atoms.ts';
import { OpenApiError } from './errors.ts';
import { createComponents } from './components.ts';
import { operation, optionsOperation } from './operations.ts';
import { openApiPath } from './parameters.ts';

type Json = Record<string, unknown>;

/** `components.schemas`: the routes' named schemas, those inside them, and the problem details; one schema a name. */
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
 * The API's licence: none is granted (package.json: UNLICENSED). A `LicenseRef-` names it: OpenAPI 3.1's
 * `identifier` is an SPDX expression, and SPDX has no identifier for "no licence".
 */
export const LICENSE = {
  name: 'Proprietary: no licence is granted (UNLICENSED)',
  identifier: 'LicenseRef-UNLICENSED',
} as const;

/** Builds the document for `routes`; throws `OpenApiError` when a route's documentation is incomplete. */
export function buildOpenApi(routes: readonly DocumentedRoute[]): Json {
  const components = createComponents();
  const paths: Record<string, Json> = {};
  const patterns = new Map<string, { route: DocumentedRoute; version: Version | undefined }>();
  for (const route of routes) {
    const versions: (Version | undefined)[] = route.versioned === false ? [undefined] : [1, 2];
    for (const version of versions) {
      const path = `${version ? `/v${version}` : ''}${openApiPath(route.pattern)}`;
      const item = paths[path] ?? {};
      paths[path] = item;
      const method = route.method.toLowerCase();
      item[method] = operation(route, method, version, components);
      if (route.method === 'GET') item.head = operation(route, 'head', version, components);
      patterns.set(path, { route, version });
    }
  }
  for (const [path, { route, version }] of patterns) {
    const item = paths[path] as Json;
    item.options = optionsOperation(route, version, item.patch !== undefined, components);
  }
  const schemas = forGenerators(
    toJsonSchemaDefs(namedSchemas(routes), {
      target: 'draft-2020-12',
      errorMode: 'ignore',
      overrideRef: (context) => `#/components/schemas/${context.referenceId}`,
    }),
  );
  const { responses, parameters, headers } = components.sections();
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
        'A field marked required is on every such answer in the default configuration, which this document ' +
          'describes: RATE_LIMIT on, CORS_ORIGINS and METRICS_TOKEN unset. RATE_LIMIT=off removes the rate-limit ' +
          'fields; a CORS preflight, and with METRICS_TOKEN a successful GET /metrics, are not counted and carry none.',
        'Answers of 1 KiB or more in a text or JSON type are compressed (gzip or br) when Accept-Encoding allows; ' +
          'each coding has its own ETag.',
      ].join(' '),
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
      responses,
      parameters,
      headers,
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

/**
 * The schemas as client generators (orval, openapi-zod-client) read them: a `const` with its `type` (else an
 * untyped value) and a one-value `enum` (openapi-zod-client reads no `const`: a union's discriminator would be any
 * string); a `pattern` without the `\/` of `RegExp.prototype.source`, which breaks a generated regex literal.
 */
function forGenerators<T>(value: T): T {
  if (Array.isArray(value)) return value.map(forGenerators) as T;
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, member] of Object.entries(value)) {
    out[key] = key === 'pattern' && typeof member === 'string' ? member.replaceAll('\\/', '/') : forGenerators(member);
  }
  if ('const' in out && ['string', 'number', 'boolean'].includes(typeof out.const))
    return { type: typeof out.const, ...out, enum: [out.const] } as T;
  return out as T;
}
