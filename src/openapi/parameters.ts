/** The parameters of an operation: its path's, its collection's query, and the request fields it reads. */
import { DEFAULT_PAGE_SIZE, MAX_PAGE_DEPTH, MAX_PAGE_SIZE, maxPage } from '../http/list-query.ts';
import { MAX_CURSOR_LENGTH } from '../http/cursor.ts';
import { ID_SCHEMA } from './atoms.ts';
import { OpenApiError } from './errors.ts';
import type { DocumentedRoute } from './types.ts';

type Json = Record<string, unknown>;

/** `/orders/{id:int}` → `/orders/{id}`. */
export function openApiPath(pattern: string): string {
  return pattern.replace(/\{([a-zA-Z]+)(?::int)?\}/g, '{$1}');
}

/** The parameters of the path of `pattern`: `{id:int}` an integer id, `{name}` a string. */
export function pathParameters(pattern: string): Json[] {
  return [...pattern.matchAll(/\{([a-zA-Z]+)(:int)?\}/g)].map((match) => ({
    name: match[1],
    in: 'path',
    required: true,
    schema: match[2] ? { ...ID_SCHEMA } : { type: 'string' },
  }));
}

/** The parameters of `route`'s operation for `method` (`get`, `head`, `post`…). */
export function parameters(route: DocumentedRoute, method: string): Json[] {
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
