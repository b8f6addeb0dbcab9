/**
 * `GET /docs` (contract §16): the interactive API reference of `/openapi.json`,
 * rendered in the browser by Swagger UI (package `swagger-ui-dist`), whose
 * script, style and icon this service serves itself under `/docs/<file>`:
 * the page makes no request to any other host. No CDN, no web fonts, no
 * validator badge (`validatorUrl: null`), no telemetry; and a
 * Content-Security-Policy that allows only this origin, with no inline
 * script (the start-up script is a file of its own, `/docs/init.js`).
 */
import type { RouteSpec } from '../pipeline/context.ts';
import { HttpError } from '../http/problem.ts';
import { HTML_TYPE, PAGE_CACHE, staticBody, staticResponse, type StaticBody } from './static.ts';
import { readSwaggerUiFile, SWAGGER_UI_FILES } from './swagger-ui-files.ts';
import { stringEnum } from '../openapi/atoms.ts';
import type { JsonSchema } from '../openapi/types.ts';

/**
 * Everything from this origin only. Images may also be `data:` URIs (the
 * icons inside swagger-ui.css); requests (the document, "Try it out") go to
 * this origin alone.
 */
export const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** Swagger UI's set-up, the one script of ours on the page. */
const INIT_SCRIPT = `// Swagger UI for this service's OpenAPI document (served by the Orders service).
window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/openapi.json',
    dom_id: '#swagger-ui',
    layout: 'BaseLayout',
    deepLinking: true,
    displayRequestDuration: true,
    // No request to validator.swagger.io, nor any other host.
    validatorUrl: null,
    // Never load another document named in the page's query string.
    queryConfigEnabled: false,
  });
});
`;

const NOSCRIPT =
  '<noscript><p>This reference needs JavaScript. ' +
  'The OpenAPI document it renders is <a href="/openapi.json">/openapi.json</a>.</p></noscript>';

const PAGE = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Orders service: API reference</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
</head>
<body>
${NOSCRIPT}
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

const TYPES: Readonly<Record<string, string>> = {
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.png': 'image/png',
};

/** The body of a file of each type, for the document: text, or bytes. */
const FILE_SCHEMAS: Readonly<Record<string, JsonSchema>> = {
  'text/css': { type: 'string' },
  'text/javascript': { type: 'string' },
  'image/png': { type: 'string', format: 'binary' },
};

/** The media types of the files, each with its schema: a type without one is a mistake at start-up. */
function fileMedia(): Record<string, JsonSchema> {
  const types = [...new Set(DOCS_FILES.map((name) => typeOf(name).split(';')[0] as string))];
  return Object.fromEntries(
    types.map((type) => {
      const schema = FILE_SCHEMAS[type];
      if (schema === undefined) throw new Error(`no schema for the media type ${type} of /docs/{file}`);
      return [type, schema];
    }),
  );
}

function typeOf(name: string): string {
  const type = TYPES[name.slice(name.lastIndexOf('.'))];
  if (type === undefined) throw new Error(`no media type for ${name}`);
  return type;
}

const page = staticBody(PAGE, HTML_TYPE);
const files = new Map<string, StaticBody>([['init.js', staticBody(INIT_SCRIPT, typeOf('init.js'))]]);
/** The package's files, read on first use and kept (the bundle is 1.7 MB). */
function fileBody(name: string): StaticBody | undefined {
  let body = files.get(name);
  if (body === undefined && SWAGGER_UI_FILES.includes(name)) {
    body = staticBody(readSwaggerUiFile(name), typeOf(name));
    files.set(name, body);
  }
  return body;
}

/** The names `/docs/<file>` answers. */
export const DOCS_FILES: readonly string[] = ['init.js', ...SWAGGER_UI_FILES];
// A file this table has no media type for is a mistake: refused at start-up.
for (const name of DOCS_FILES) typeOf(name);

export const docsRoutes: readonly RouteSpec[] = [
  {
    method: 'GET',
    pattern: '/docs',
    auth: 'public',
    versioned: false,
    cache: PAGE_CACHE,
    doc: {
      summary: 'Interactive API reference (HTML)',
      description:
        'A text/html page rendering this OpenAPI document with Swagger UI, whose script and style the service ' +
        'serves itself under /docs/{file}: the page makes no request to another host. Sent with a ' +
        'Content-Security-Policy allowing this origin only. No token needed.',
      success: {
        status: 200,
        media: { 'text/html': { type: 'string' } },
        fields: { 'Content-Security-Policy': true, 'X-Content-Type-Options': true },
      },
    },
    handler: async () => staticResponse(page, { 'content-security-policy': DOCS_CSP }),
  },
  {
    method: 'GET',
    pattern: '/docs/{file}',
    auth: 'public',
    versioned: false,
    cache: PAGE_CACHE,
    doc: {
      summary: 'A script, style or image of the API reference',
      description:
        `The files /docs loads: ${DOCS_FILES.join(', ')} (text/javascript, text/css or image/png), from the ` +
        'swagger-ui-dist package, except init.js, which starts it. Cached publicly for CACHE_MAX_AGE seconds, with ' +
        'a strong ETag for revalidation. Any other name is 404.',
      success: {
        status: 200,
        media: fileMedia(),
        fields: { 'X-Content-Type-Options': true },
      },
      params: {
        file: { description: 'The name of one of the files.', schema: stringEnum(DOCS_FILES) },
      },
    },
    handler: async (ctx) => {
      const name = ctx.params.file as string;
      const body = fileBody(name);
      if (body === undefined) throw new HttpError(404, 'not-found', { detail: `There is no file ${name} in /docs.` });
      return staticResponse(body);
    },
  },
];
