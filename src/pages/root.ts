/**
 * `GET /` (contract §16): a small index of where to start, for people and
 * for clients that discover the service from its root: JSON, or an HTML page
 * of the same links for a browser (`Accept` prefers `text/html`). The JSON:
 *
 *     {"name": "Orders service",
 *      "links": {"docs": {"href": "/docs", "type": "text/html", "title": "…"},
 *                "openapi": {…}, "products": {…}, "health": {…}}}
 *
 * Each link is keyed by a stable name and gives `href` (a path on this
 * service), the media type it answers in and a title. The same for every
 * caller and every request: public, and cacheable like the catalog; `Vary: Accept`.
 */
import * as v from 'valibot';
import type { RouteSpec } from '../pipeline/context.ts';
import { JSON_TYPE } from '../http/negotiation.ts';
import { HttpError } from '../http/problem.ts';
import { named } from '../openapi/atoms.ts';
import { preferredType } from './negotiate.ts';
import { escapeHtml, PROBLEM_PAGE_CSP, STYLE } from './problems.ts';
import { HTML_TYPE, PAGE_CACHE, staticBody, staticResponse } from './static.ts';

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

// JSON first: a client that states no preference (no Accept, or any type) gets it; a browser prefers text/html.
const OFFERS = [JSON_TYPE, 'text/html'] as const;

const body = staticBody(JSON.stringify(INDEX), JSON_TYPE);

const html = staticBody(
  `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${INDEX.name}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
<h1>${INDEX.name}</h1>
<p>Orders, order items, users, payments and a product catalog, over HTTP. Where to start:</p>
<ul>
${Object.values(INDEX.links)
  .map(
    (link) => `<li><a href="${escapeHtml(link.href)}">${escapeHtml(link.title)}</a> (<code>${link.type}</code>)</li>`,
  )
  .join('\n')}
</ul>
</main>
</body>
</html>
`,
  HTML_TYPE,
);

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
      'public catalog) and `health` (`/healthz`) to `{"href", "type", "title"}`; or, when `Accept` prefers ' +
      '`text/html` (a browser), an HTML page of the same links. JSON when `Accept` states no preference; 406 ' +
      '`not-acceptable` when it allows neither. No token needed; cached publicly for CACHE_MAX_AGE seconds, with ' +
      'a strong ETag, `Vary: Accept`.',
    success: {
      status: 200,
      schema: INDEX_SCHEMA,
      media: { 'text/html': { type: 'string' } },
      fields: { Vary: true, 'Content-Security-Policy': false, 'X-Content-Type-Options': true },
    },
    problems: [[406, 'not-acceptable']],
  },
  handler: async (ctx) => {
    const offer = preferredType(ctx.header('accept'), OFFERS);
    if (offer === undefined) {
      throw new HttpError(406, 'not-acceptable', {
        detail: `Nothing in Accept can be produced here; the index is available as ${OFFERS.join(', ')}.`,
        headers: { vary: 'Accept' },
      });
    }
    return offer === 'text/html'
      ? staticResponse(html, { vary: 'Accept', 'content-security-policy': PROBLEM_PAGE_CSP })
      : staticResponse(body, { vary: 'Accept' });
  },
};
