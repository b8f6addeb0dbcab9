/**
 * `GET /openapi.json`: the document, built once when the routes are assembled,
 * and serialized once: every answer shares the same bytes and tag (about 330 KB;
 * contract §11: a client pipelining requests for it costs no new copy each).
 */
import * as v from 'valibot';
import type { RouteSpec } from '../pipeline/context.ts';
import { JSON_CONTENT_TYPE } from '../http/json.ts';
import { bufferedResponse } from '../http/response.ts';
import { type StaticBody, staticBody } from './static.ts';
import { named } from '../openapi/atoms.ts';
import { buildOpenApi } from '../openapi/document.ts';

const OPENAPI_DOCUMENT = named(
  'OpenApiDocument',
  v.pipe(v.record(v.string(), v.unknown()), v.description('this document')),
);

/** The route serving the document of `routes` and of itself. */
export function openApiRoute(routes: readonly RouteSpec[]): RouteSpec {
  let body: StaticBody | undefined;
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
    handler: async () => {
      const { bytes, type, etag } = body as StaticBody;
      return bufferedResponse(bytes, {
        status: 200,
        headers: { 'content-type': type, 'content-length': String(bytes.byteLength), etag },
      });
    },
  };
  body = staticBody(JSON.stringify(buildOpenApi([...routes, self])), JSON_CONTENT_TYPE);
  return self;
}
