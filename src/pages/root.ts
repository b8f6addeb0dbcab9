/**
 * `GET /` (contract §16): a small JSON index of where to start, for people and
 * for clients that discover the service from its root. Its shape:
 *
 *     {"name": "Orders service",
 *      "links": {"docs": {"href": "/docs", "type": "text/html", "title": "…"},
 *                "openapi": {…}, "products": {…}, "health": {…}}}
 *
 * Each link is keyed by a stable name and gives `href` (a path on this
 * service), the media type it answers in and a title. The same for every
 * caller and every request: public, and cacheable like the catalog.
 */
import * as v from 'valibot';
import type { RouteSpec } from '../pipeline/context.ts';
import { JSON_TYPE } from '../http/negotiation.ts';
import { named } from '../openapi/atoms.ts';
import { PAGE_CACHE, staticBody, staticResponse } from './static.ts';

export interface IndexLink {
  readonly href: string;
  readonly type: string;
  readonly title: string;
}

export const INDEX = {
  name: 'Orders service',
  links: {
    docs: { href: '/docs', type: 'text/html', title: 'Interactive API reference, rendered from the OpenAPI document' },
    openapi: { href: '/openapi.json', type: JSON_TYPE, title: 'The OpenAPI 3.1 document of the API' },
    products: { href: '/v2/products', type: JSON_TYPE, title: 'The product catalog, version 2 (no token needed)' },
    health: { href: '/healthz', type: JSON_TYPE, title: 'Liveness: 200 while the process runs' },
  },
} as const satisfies { name: string; links: Readonly<Record<string, IndexLink>> };

const body = staticBody(JSON.stringify(INDEX), JSON_TYPE);

/** The schema of `INDEX`, for the document: each of its links by name. */
const LINK = named(
  'IndexLink',
  v.strictObject({
    href: v.pipe(v.string(), v.description('a path on this service')),
    type: v.pipe(v.string(), v.description('the media type it answers in')),
    title: v.string(),
  }),
);
const INDEX_SCHEMA = named(
  'Index',
  v.strictObject({
    name: v.string(),
    links: v.strictObject(Object.fromEntries(Object.keys(INDEX.links).map((name) => [name, LINK.schema]))),
  }),
  [LINK],
);

export const rootRoute: RouteSpec = {
  method: 'GET',
  pattern: '/',
  auth: 'public',
  versioned: false,
  cache: PAGE_CACHE,
  doc: {
    summary: 'Index of the service: links to start from',
    description:
      'A small JSON object, the same for every caller: `{"name": "Orders service", "links": {…}}` where `links` ' +
      'maps `docs` (`/docs`, this reference), `openapi` (`/openapi.json`), `products` (`/v2/products`, the ' +
      'public catalog) and `health` (`/healthz`) to `{"href", "type", "title"}`. No token needed; cached ' +
      'publicly for CACHE_MAX_AGE seconds, with a strong ETag.',
    success: { status: 200, schema: INDEX_SCHEMA, fields: { 'X-Content-Type-Options': true } },
  },
  handler: async () => staticResponse(body),
};
