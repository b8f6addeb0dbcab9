/**
 * The parameters of an operation: its path's, its query's, and the request fields it reads; those a kind of route
 * shares are in `components.parameters`. Every string is bounded by an `enum` or a `maxLength`: the service's own
 * limit, or where it has none the request's (below).
 */
import { DEFAULT_PAGE_SIZE, MAX_PAGE_DEPTH, MAX_PAGE_SIZE, maxPage } from '../http/list-query.ts';
import { MAX_CURSOR_LENGTH } from '../http/cursor.ts';
import { ID_SCHEMA } from './atoms.ts';
import type { Components } from './components.ts';
import { OpenApiError } from './errors.ts';
import type { DocumentedRoute, JsonSchema, ParameterDoc } from './types.ts';

type Json = Record<string, unknown>;

/**
 * contract §11: node refuses (431) a header section over 16 KiB, request line included: the bound of a field or a
 * URL part that has no limit of its own.
 */
export const MAX_HEADER_SECTION = 16 * 1024;
/** contract §13: a request id is kept when it is 1–128 visible ASCII characters, and replaced otherwise. */
const MAX_REQUEST_ID = 128;
/** contract §7: 1–255 visible characters, or a structured-field string (two quotes more). */
const MAX_IDEMPOTENCY_KEY = 257;

const TAGS = `No limit of its own: the request's header section is at most ${MAX_HEADER_SECTION / 1024} KiB (431).`;

/** The parameters every route of a kind shares, as components. */
const SHARED: Readonly<Record<string, Json>> = {
  id: { name: 'id', in: 'path', required: true, description: 'The id.', schema: ID_SCHEMA },
  page: {
    name: 'page',
    in: 'query',
    description:
      `Page number; a page past the last is empty. Reaches at most ${MAX_PAGE_DEPTH} rows deep: (page - 1) × ` +
      `pageSize must be below ${MAX_PAGE_DEPTH} (so at most ${MAX_PAGE_DEPTH} with pageSize 1, ` +
      `${maxPage(DEFAULT_PAGE_SIZE)} with the default ${DEFAULT_PAGE_SIZE}); deeper is 400 invalid-query: ` +
      "follow the next link's cursor instead. Not with cursor.",
    schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_DEPTH, default: 1 },
  },
  pageSize: {
    name: 'pageSize',
    in: 'query',
    description: 'Items per page.',
    schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE },
  },
  cursor: {
    name: 'cursor',
    in: 'query',
    description:
      'Opaque: the page after the position it holds, as the next link (Link rel="next", meta.next) gives it. ' +
      'Signed by the service: a changed, cut or made-up cursor is 400 invalid-query, as is one used with other ' +
      'filters or another sort than it was made for (pageSize may change), or with page. It carries the number ' +
      'of the page it leads to (meta.page).',
    schema: {
      type: 'string',
      minLength: 1,
      maxLength: MAX_CURSOR_LENGTH,
      pattern: '^[A-Za-z0-9_-]+[.][A-Za-z0-9_-]+$',
    },
  },
  'If-None-Match': {
    name: 'If-None-Match',
    in: 'header',
    description: `Entity tags (or *): a match answers 304 (weak comparison; the tag of any content coding). ${TAGS}`,
    schema: { type: 'string', maxLength: MAX_HEADER_SECTION },
  },
  'If-Match': {
    name: 'If-Match',
    in: 'header',
    description:
      'Entity tags (or *): the write happens only if the current tag (of any content coding) matches (strong ' +
      `comparison), else 412. ${TAGS}`,
    schema: { type: 'string', maxLength: MAX_HEADER_SECTION },
  },
  'Idempotency-Key': {
    name: 'Idempotency-Key',
    in: 'header',
    description: '1–255 visible ASCII characters, or a structured-field string. Kept 24 hours per user (contract §7).',
    schema: { type: 'string', minLength: 1, maxLength: MAX_IDEMPOTENCY_KEY },
  },
  'X-Request-Id': {
    name: 'X-Request-Id',
    in: 'header',
    description:
      `The request's id for the log and the answer's X-Request-Id: 1–${MAX_REQUEST_ID} visible ASCII ` +
      'characters; any other value is replaced by a generated id (never refused).',
    schema: { type: 'string', minLength: 1, maxLength: MAX_REQUEST_ID, pattern: '^[\\x21-\\x7e]+$' },
  },
};

const shared = (name: string, components: Components, variant: Json = {}): Json =>
  components.ref('parameters', Object.keys(variant).length === 0 ? name : `${name}.required`, {
    ...SHARED[name],
    ...variant,
  });

/** `X-Request-Id`, which every request may send, OPTIONS included. */
export const requestIdParameter = (components: Components): Json => shared('X-Request-Id', components);

/** `/orders/{id:int}` → `/orders/{id}`. */
export function openApiPath(pattern: string): string {
  return pattern.replace(/\{([a-zA-Z]+)(?::int)?\}/g, '{$1}');
}

/** A string without a `maxLength` or an `enum` is a mistake at start-up: every request string is bounded. */
function bounded(where: string, name: string, documented: ParameterDoc): ParameterDoc {
  const { type, maxLength, enum: values } = documented.schema;
  if (type === 'string' && typeof maxLength !== 'number' && !Array.isArray(values))
    throw new OpenApiError(`${where}: the string parameter ${name} has no maxLength`);
  return documented;
}

/** The parameters of the path of `route`: `{id:int}` an id, `{name}` as the route documents it in `doc.params`. */
export function pathParameters(route: DocumentedRoute, components: Components): Json[] {
  return [...route.pattern.matchAll(/\{([a-zA-Z]+)(:int)?\}/g)].map(([, name = '', int]) => {
    if (int) return name === 'id' ? shared('id', components) : { name, in: 'path', required: true, schema: ID_SCHEMA };
    const documented = route.doc.params?.[name];
    if (documented === undefined)
      throw new OpenApiError(`${route.method} ${route.pattern}: the path parameter ${name} has no documentation`);
    const { description, schema } = bounded(`${route.method} ${route.pattern}`, name, documented);
    return { name, in: 'path', required: true, description, schema };
  });
}

/** `sort`'s value: the keys, each at most once, `-` for descending; its longest value bounds its length. */
function sortSchema(keys: readonly string[]): JsonSchema {
  const alternatives = keys.join('|');
  const longest = keys.reduce((length, key) => length + key.length + 1, keys.length - 1);
  return { type: 'string', maxLength: longest, pattern: `^-?(${alternatives})(,-?(${alternatives}))*$` };
}

/** The parameters of `route`'s operation for `method` (`get`, `head`, `post`…). */
export function parameters(route: DocumentedRoute, method: string, components: Components): Json[] {
  const where = `${route.method} ${route.pattern}`;
  const params = pathParameters(route, components);
  const { list, query } = route.doc;
  if (list) {
    params.push(shared('page', components), shared('pageSize', components), {
      name: 'sort',
      in: 'query',
      description:
        `Comma-separated sort keys (${list.sortKeys.join(', ')}), each at most once; -key descending; applied in ` +
        'the order given, then by id in the direction of the last key.',
      schema: sortSchema(list.sortKeys),
    });
    params.push(shared('cursor', components));
    for (const filter of Object.keys(list.filters)) {
      if (query?.[filter] === undefined) throw new OpenApiError(`${where}: the filter ${filter} has no documentation`);
    }
  }
  for (const [name, documented] of Object.entries(query ?? {})) {
    const { description, schema } = bounded(where, name, documented);
    params.push({ name, in: 'query', description, schema });
  }
  if (method === 'get' || method === 'head') params.push(shared('If-None-Match', components));
  if (route.doc.ifMatch) params.push(shared('If-Match', components));
  if (route.method === 'POST') {
    params.push(
      route.idempotency === 'required'
        ? shared('Idempotency-Key', components, { required: true })
        : shared('Idempotency-Key', components),
    );
  }
  params.push(requestIdParameter(components));
  return params;
}
