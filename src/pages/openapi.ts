/** `GET /openapi.json`: the document, built once when the routes are assembled. */
import * as v from 'valibot';
import type { RouteSpec } from '../pipeline/context.ts';
import { jsonResponse } from '../http/json.ts';
import { named } from '../openapi/atoms.ts';
import { buildOpenApi } from '../openapi/document.ts';

const OPENAPI_DOCUMENT = named(
  'OpenApiDocument',
  v.pipe(v.record(v.string(), v.unknown()), v.description('this document')),
);

/** The route serving the document of `routes` and of itself. */
export function openApiRoute(routes: readonly RouteSpec[]): RouteSpec {
  let body: unknown;
  const self: RouteSpec = {
    method: 'GET',
    pattern: '/openapi.json',
    auth: 'public',
    versioned: false,
    cache: 'public',
    doc: {
      summary: 'This OpenAPI 3.1 document',
      description:
        'Generated at start-up from the route table and the schemas that validate requests, so it never ' +
        'disagrees with the service. Public and cacheable.',
      success: { status: 200, schema: OPENAPI_DOCUMENT },
    },
    handler: async () => jsonResponse(body),
  };
  body = buildOpenApi([...routes, self]);
  return self;
}
