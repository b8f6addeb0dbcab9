/**
 * Collection query strings (contract §4): filters, `sort`, `page`, `pageSize` and `cursor`. Strict: an unknown or
 * repeated parameter, a bad sort key or a value that does not parse is an error naming that parameter; nothing is
 * silently ignored. The cursor itself is cursor.ts's, the page links page-links.ts's. Pure.
 */

import { HttpError, listedErrors } from './problem.ts';
import type { KeyType, SortKey } from './sort-order.ts';
import { type CursorPosition, decodeCursor } from './cursor.ts';

export type FilterParser<T> = (value: string) => { readonly value: T } | { readonly error: string };

export interface ListSpec<K extends string, F extends Record<string, unknown>> {
  readonly sortKeys: readonly K[];
  /** The SQL type of each sort key's values, `id` included (a cursor carries them). */
  readonly keyTypes: { readonly [P in K | 'id']: KeyType };
  readonly filters: { readonly [P in keyof F]: FilterParser<F[P]> };
}

export interface ListQuery<K extends string, F extends Record<string, unknown>> {
  /** The number of the page: asked for by `page`, or carried by the cursor (every page has one). */
  readonly page: number;
  readonly pageSize: number;
  /** As given; empty means the default order. `id` is appended as the tie-breaker by `sortOrder()`. */
  readonly sort: readonly SortKey<K>[];
  readonly filters: Partial<F>;
  /** On a cursor page: the position it continues after, the last row's value of each key of `sortOrder(sort)`. */
  readonly after?: readonly string[];
}

export interface QueryError {
  readonly parameter: string;
  readonly detail: string;
}

export type ParseResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly errors: readonly QueryError[] };

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;
/** contract §4, §11: `page` reaches at most this many rows deep, `(page - 1) × pageSize < MAX_PAGE_DEPTH`. */
export const MAX_PAGE_DEPTH = 10_000;
const POSITIVE_INT = /^[1-9][0-9]{0,15}$/;
const DIGITS = /^[1-9][0-9]*$/;

/** `value` as a positive integer up to `max` (digits only, no sign, no leading zero): the rule of every id. */
export function positiveInteger(value: string, max = Number.MAX_SAFE_INTEGER): number | undefined {
  if (!POSITIVE_INT.test(value)) return undefined;
  const n = Number(value);
  return n <= max ? n : undefined;
}

/** A filter or cursor naming a resource by id. */
export const positiveId: FilterParser<number> = (value) => {
  const n = positiveInteger(value);
  return n === undefined ? { error: 'must be a positive integer' } : { value: n };
};

/** What a cursor is checked against beside the query: the keys it may be sealed under, and its client. */
export interface CursorContext {
  /** The current cursor key first, then the previous (the key rotates). */
  readonly keys: readonly Uint8Array[];
  readonly principal: string;
}

/**
 * Parses `search` against `spec`, collecting every error. A cursor is bound to `collection` (the path without its
 * version prefix); `unopened` says none of the keys opened it (a newer key may have sealed it).
 */
export function parseListQuery<K extends string, F extends Record<string, unknown>>(
  search: URLSearchParams,
  spec: ListSpec<K, F>,
  collection: string,
  cursors: CursorContext,
): ParseResult<ListQuery<K, F>> & { readonly unopened?: true } {
  const errors: QueryError[] = [];
  const seen = new Set<string>();
  const repeated = new Set<string>();
  let page: number | undefined;
  let pageSize = DEFAULT_PAGE_SIZE;
  let sort: SortKey<K>[] = [];
  let cursor: string | undefined;
  const filters: Partial<F> = {};
  for (const [name, value] of search) {
    if (seen.has(name)) {
      // Report a repeated parameter once, however often it repeats (a Set: a long query string stays linear).
      if (!repeated.has(name)) errors.push({ parameter: name, detail: 'must be given once' });
      repeated.add(name);
      continue;
    }
    seen.add(name);
    if (name === 'page') {
      // Any number of digits: a page too deep is refused below, naming the cursor.
      if (DIGITS.test(value)) page = value.length > 16 ? Number.POSITIVE_INFINITY : Number(value);
      else errors.push({ parameter: name, detail: 'must be an integer of at least 1' });
    } else if (name === 'pageSize') {
      const n = positiveInteger(value, MAX_PAGE_SIZE);
      if (n === undefined) errors.push({ parameter: name, detail: `must be an integer from 1 to ${MAX_PAGE_SIZE}` });
      else pageSize = n;
    } else if (name === 'sort') {
      const parsed = parseSort(value, spec.sortKeys);
      if (parsed.ok) sort = parsed.value;
      else errors.push(...parsed.errors);
    } else if (name === 'cursor') {
      cursor = value;
    } else if (Object.hasOwn(spec.filters, name)) {
      const parsed = spec.filters[name as keyof F](value);
      if ('error' in parsed) errors.push({ parameter: name, detail: parsed.error });
      else filters[name as keyof F] = parsed.value;
    } else {
      const known = ['page', 'pageSize', 'sort', 'cursor', ...Object.keys(spec.filters)].join(', ');
      errors.push({ parameter: name, detail: `is not a parameter of this collection; use ${known}` });
    }
  }
  if (page !== undefined && (page - 1) * pageSize >= MAX_PAGE_DEPTH) {
    // contract §4 "Deep pages": an OFFSET that deep reads and drops every row before it.
    errors.push({
      parameter: 'page',
      detail:
        `must be at most ${maxPage(pageSize)} with pageSize ${pageSize}: page reaches at most 10,000 rows deep; ` +
        "follow the next link's cursor to go further",
    });
  }
  let position: CursorPosition | undefined;
  let unopened = false;
  if (cursor !== undefined && !repeated.has('cursor')) {
    if (seen.has('page')) {
      errors.push({ parameter: 'cursor', detail: 'cannot be given with page: the cursor carries its page number' });
    } else if (errors.length === 0) {
      // Only a query that parsed has filters and a sort to check the cursor against.
      const scope = { sort, filters, pageSize, principal: cursors.principal };
      const decoded = decodeCursor(cursors.keys, cursor, collection, scope, spec.keyTypes);
      if ('error' in decoded) {
        errors.push({ parameter: 'cursor', detail: decoded.error });
        unopened = decoded.unopened === true;
      } else position = decoded;
    }
  }
  if (errors.length > 0) return unopened ? { ok: false, errors, unopened } : { ok: false, errors };
  const common = { pageSize, sort, filters };
  return {
    ok: true,
    value:
      position === undefined
        ? { page: page ?? 1, ...common }
        : { page: position.page, ...common, after: position.values },
  };
}

/** The deepest `page` allowed with `pageSize`. */
export function maxPage(pageSize: number): number {
  return Math.ceil(MAX_PAGE_DEPTH / pageSize);
}

/** Parses a `sort` value: comma-separated keys, `-key` descending. */
export function parseSort<K extends string>(value: string, allowed: readonly K[]): ParseResult<SortKey<K>[]> {
  const errors: QueryError[] = [];
  const keys: SortKey<K>[] = [];
  for (const part of value.split(',')) {
    const descending = part.startsWith('-');
    const key = descending ? part.slice(1) : part;
    if (key === '') {
      errors.push({ parameter: 'sort', detail: 'has an empty sort key' });
    } else if (!(allowed as readonly string[]).includes(key)) {
      errors.push({
        parameter: 'sort',
        detail: `has the unknown sort key ${JSON.stringify(key)}; use ${allowed.join(', ')}`,
      });
    } else if (keys.some((k) => k.key === key)) {
      errors.push({ parameter: 'sort', detail: `names the sort key ${JSON.stringify(key)} more than once` });
    } else {
      keys.push({ key: key as K, descending });
    }
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, value: keys };
}

/** 400 `invalid-query` naming each offending parameter the problem lists. */
export function invalidQuery(errors: readonly QueryError[]): HttpError {
  const names = [...new Set(listedErrors(errors).listed.map((e) => e.parameter))].join(', ');
  return new HttpError(400, 'invalid-query', { detail: `The query parameters ${names} are invalid.`, errors });
}
