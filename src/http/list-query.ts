/**
 * Collection query strings (contract §4): filters, `sort`, `page`, `pageSize`.
 * Strict by design: an undocumented parameter, a repeated parameter, an
 * unknown, repeated or empty sort key, or a value that does not parse is an
 * error naming that parameter; nothing is ever silently ignored. Pure.
 */

import { HttpError, listedErrors } from './problem.ts';

export interface SortKey<K extends string = string> {
  readonly key: K;
  readonly descending: boolean;
}

export type FilterParser<T> = (value: string) => { readonly value: T } | { readonly error: string };

export interface ListSpec<K extends string, F extends Record<string, unknown>> {
  /** The sort keys this collection accepts. */
  readonly sortKeys: readonly K[];
  /** The filters this collection accepts, each with its parser. */
  readonly filters: { readonly [P in keyof F]: FilterParser<F[P]> };
}

export interface ListQuery<K extends string, F extends Record<string, unknown>> {
  readonly page: number;
  readonly pageSize: number;
  /** As given; empty means the default order. `id` is appended as the tie-breaker by `orderBy()`. */
  readonly sort: readonly SortKey<K>[];
  readonly filters: Partial<F>;
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
const POSITIVE_INT = /^[1-9][0-9]{0,15}$/;

/**
 * `value` as a positive integer of at most `max` (2^53−1 by default): digits
 * only, no sign, no leading zero; else `undefined`. The rule of every id in
 * a path, a query or a command-line option (contract §4).
 */
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

/**
 * Parses `search` against `spec`, collecting every error rather than stopping at the first.
 *
 * @example
 * parseListQuery(new URLSearchParams('sort=-createdAt&page=2'), { sortKeys: ['id', 'createdAt'], filters: {} })
 * // { ok: true, value: { page: 2, pageSize: 20, sort: [{ key: 'createdAt', descending: true }], filters: {} } }
 */
export function parseListQuery<K extends string, F extends Record<string, unknown>>(
  search: URLSearchParams,
  spec: ListSpec<K, F>,
): ParseResult<ListQuery<K, F>> {
  const errors: QueryError[] = [];
  const seen = new Set<string>();
  const repeated = new Set<string>();
  let page = 1;
  let pageSize = DEFAULT_PAGE_SIZE;
  let sort: SortKey<K>[] = [];
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
      const n = positiveInteger(value);
      if (n === undefined) errors.push({ parameter: name, detail: 'must be an integer of at least 1' });
      else page = n;
    } else if (name === 'pageSize') {
      const n = positiveInteger(value, MAX_PAGE_SIZE);
      if (n === undefined) errors.push({ parameter: name, detail: `must be an integer from 1 to ${MAX_PAGE_SIZE}` });
      else pageSize = n;
    } else if (name === 'sort') {
      const parsed = parseSort(value, spec.sortKeys);
      if (parsed.ok) sort = parsed.value;
      else errors.push(...parsed.errors);
    } else if (Object.hasOwn(spec.filters, name)) {
      const parsed = spec.filters[name as keyof F](value);
      if ('error' in parsed) errors.push({ parameter: name, detail: parsed.error });
      else filters[name as keyof F] = parsed.value;
    } else {
      const known = ['page', 'pageSize', 'sort', ...Object.keys(spec.filters)].join(', ');
      errors.push({ parameter: name, detail: `is not a parameter of this collection; use ${known}` });
    }
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, value: { page, pageSize, sort, filters } };
}

/** Parses a `sort` value: comma-separated keys, `-key` descending (contract §4). */
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

/** The number of pages for `total` items; 0 when there are none. */
export function pageCount(total: number, pageSize: number): number {
  return Math.ceil(total / pageSize);
}

/**
 * The RFC 8288 `Link` value for a page of a collection: `first`, `prev`,
 * `next` and `last` as they apply, each the same request (path and query,
 * as a relative reference) with another `page`.
 */
export function paginationLinks(url: URL, page: number, pages: number): string {
  const last = Math.max(pages, 1);
  const link = (n: number, rel: string) => {
    const search = new URLSearchParams(url.search);
    search.set('page', String(n));
    return `<${url.pathname}?${search.toString()}>; rel="${rel}"`;
  };
  const links = [link(1, 'first')];
  if (page > 1) links.push(link(Math.min(page - 1, last), 'prev'));
  if (page < last) links.push(link(page + 1, 'next'));
  links.push(link(last, 'last'));
  return links.join(', ');
}

/** 400 `invalid-query` naming each offending parameter the problem lists (contract §4, §11). */
export function invalidQuery(errors: readonly QueryError[]): HttpError {
  const names = [...new Set(listedErrors(errors).listed.map((e) => e.parameter))].join(', ');
  return new HttpError(400, 'invalid-query', { detail: `The query parameters ${names} are invalid.`, errors });
}
