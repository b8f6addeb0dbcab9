/**
 * Collection query strings (contract §4): filters, `sort`, `page`, `pageSize`
 * and `cursor`. Strict by design: an undocumented parameter, a repeated
 * parameter, an unknown, repeated or empty sort key, or a value that does not
 * parse is an error naming that parameter; nothing is ever silently ignored.
 * Also the cursor itself (its text, and what it is bound to) and the page
 * links. Pure.
 */

import { createHash } from 'node:crypto';
import { HttpError, listedErrors } from './problem.ts';

export interface SortKey<K extends string = string> {
  readonly key: K;
  readonly descending: boolean;
}

export type FilterParser<T> = (value: string) => { readonly value: T } | { readonly error: string };

/**
 * The SQL type of a sort key's values: how a cursor's value (always text)
 * is checked before it reaches SQL, and what it is cast to there.
 */
export type KeyType = 'bigint' | 'numeric' | 'text' | 'timestamptz';

export interface ListSpec<K extends string, F extends Record<string, unknown>> {
  /** The sort keys this collection accepts. */
  readonly sortKeys: readonly K[];
  /** The SQL type of each sort key's values, `id` included (a cursor carries them). */
  readonly keyTypes: { readonly [P in K | 'id']: KeyType };
  /** The filters this collection accepts, each with its parser. */
  readonly filters: { readonly [P in keyof F]: FilterParser<F[P]> };
}

export interface ListQuery<K extends string, F extends Record<string, unknown>> {
  /** The page by number; absent on a cursor page. */
  readonly page?: number;
  readonly pageSize: number;
  /** As given; empty means the default order. `id` is appended as the tie-breaker by `sortOrder()`. */
  readonly sort: readonly SortKey<K>[];
  readonly filters: Partial<F>;
  /**
   * On a cursor page: the keyset position it continues after, the last row's
   * value of each key of `sortOrder(sort)` (`id` last), as text, checked
   * against the key's type.
   */
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
/** The longest `cursor` taken: far above any this service makes (about 200 characters). */
export const MAX_CURSOR_LENGTH = 512;
const POSITIVE_INT = /^[1-9][0-9]{0,15}$/;
const DIGITS = /^[1-9][0-9]*$/;

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
 * Parses `search` against `spec`, collecting every error rather than
 * stopping at the first. `collection` names the collection a cursor is bound
 * to (its path without the version prefix), with the filters and the order.
 *
 * @example
 * parseListQuery(new URLSearchParams('sort=-createdAt&page=2'), spec)
 * // { ok: true, value: { page: 2, pageSize: 20, sort: [{ key: 'createdAt', descending: true }], filters: {} } }
 */
export function parseListQuery<K extends string, F extends Record<string, unknown>>(
  search: URLSearchParams,
  spec: ListSpec<K, F>,
  collection = '',
): ParseResult<ListQuery<K, F>> {
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
  let after: readonly string[] | undefined;
  if (cursor !== undefined && !repeated.has('cursor')) {
    if (seen.has('page')) {
      errors.push({ parameter: 'cursor', detail: 'cannot be given with page: a cursor page has no number' });
    } else if (errors.length === 0) {
      // Only a query that parsed has filters and a sort to check the cursor against.
      const decoded = decodeCursor(cursor, collection, { sort, filters }, spec.keyTypes);
      if ('error' in decoded) errors.push({ parameter: 'cursor', detail: decoded.error });
      else after = decoded.values;
    }
  }
  if (errors.length > 0) return { ok: false, errors };
  const common = { pageSize, sort, filters };
  return { ok: true, value: after === undefined ? { page: page ?? 1, ...common } : { ...common, after } };
}

/** The deepest `page` allowed with `pageSize` (contract §4: `(page - 1) × pageSize < 10000`). */
export function maxPage(pageSize: number): number {
  return Math.ceil(MAX_PAGE_DEPTH / pageSize);
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
 * The order a `sort` gives, as the database applies it: its keys up to `id`,
 * which always ends it (contract §4: appended in the direction of the last
 * key when not given; keys after it never decide anything).
 *
 * @example
 * sortOrder([{ key: 'total', descending: true }])
 * // [{ key: 'total', descending: true }, { key: 'id', descending: true }]
 */
export function sortOrder<K extends string>(sort: readonly SortKey<K>[]): SortKey<K | 'id'>[] {
  const id = sort.findIndex((k) => k.key === 'id');
  if (id >= 0) return sort.slice(0, id + 1);
  return [...sort, { key: 'id', descending: sort.at(-1)?.descending ?? false }];
}

/** What a cursor is bound to: the query's filters and sort. */
export interface CursorScope {
  readonly sort: readonly SortKey[];
  readonly filters: Readonly<Record<string, unknown>>;
}

const CURSOR_VERSION = 1;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/**
 * The fingerprint of what a cursor is made for: the collection, its filters
 * (as parsed, by name) and its order. 96 bits of SHA-256: it tells a
 * cursor used with another query from its own, and is no secret.
 */
function fingerprint(collection: string, scope: CursorScope): string {
  const order = sortOrder(scope.sort).map((k) => `${k.descending ? '-' : ''}${k.key}`);
  const filters = Object.entries(scope.filters)
    .filter(([, value]) => value !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash('sha256')
    .update(JSON.stringify([collection, order, filters]))
    .digest('base64url')
    .slice(0, 16);
}

/**
 * The `cursor` of the page after the row whose keyset position is `values`
 * (its value of each key of `sortOrder()`, as the database gives them as
 * text): base64url of `{"v":1,"f":<fingerprint>,"k":[values]}`.
 *
 * @example
 * encodeCursor('/orders', { sort: [], filters: {} }, ['42']) // 'eyJ2IjoxLCJmIjoi…'
 */
export function encodeCursor(collection: string, scope: CursorScope, values: readonly string[]): string {
  const payload = { v: CURSOR_VERSION, f: fingerprint(collection, scope), k: values };
  return Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url');
}

/**
 * The keyset position `text` holds, if it is a cursor this service made for
 * `collection` with these filters and this sort, each value of the type of
 * its key; else why not. Nothing of a refused cursor reaches SQL.
 */
export function decodeCursor(
  text: string,
  collection: string,
  scope: CursorScope,
  types: Readonly<Record<string, KeyType>>,
): { readonly values: readonly string[] } | { readonly error: string } {
  const malformed = { error: "is not a cursor of this collection; pass the next link's cursor exactly as given" };
  if (text.length > MAX_CURSOR_LENGTH || !BASE64URL.test(text)) return malformed;
  const bytes = Buffer.from(text, 'base64url');
  // One text per cursor: a cursor whose bytes re-encode otherwise was not made here.
  if (bytes.toString('base64url') !== text) return malformed;
  let payload: unknown;
  try {
    payload = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (error) {
    // Not UTF-8 (TypeError from the decoder), or not JSON (SyntaxError).
    if (error instanceof TypeError || error instanceof SyntaxError) return malformed;
    throw error;
  }
  if (!isCursorPayload(payload)) return malformed;
  if (payload.f !== fingerprint(collection, scope))
    return { error: 'was made for other filters or another sort; keep those of the link that gave it' };
  const keys = sortOrder(scope.sort);
  if (payload.k.length !== keys.length) return malformed;
  for (const [i, key] of keys.entries()) {
    const type = types[key.key];
    if (type === undefined || !validValue(type, payload.k[i] as string)) return malformed;
  }
  return { values: payload.k };
}

function isCursorPayload(value: unknown): value is { v: number; f: string; k: string[] } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const { v, f, k, ...rest } = value as Record<string, unknown>;
  return (
    Object.keys(rest).length === 0 &&
    v === CURSOR_VERSION &&
    typeof f === 'string' &&
    Array.isArray(k) &&
    k.every((x) => typeof x === 'string')
  );
}

const BIGINT = /^[1-9][0-9]{0,18}$/;
const NUMERIC = /^-?[0-9]{1,20}(\.[0-9]{1,20})?$/;
/** As sql/queries/*.sql write a timestamp for a cursor: UTC, microseconds, the database's exact value. */
const TIMESTAMP = /^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})\.[0-9]{6}Z$/;
const MAX_BIGINT = 2n ** 63n - 1n;
const MAX_TEXT_LENGTH = 256;

/** Whether PostgreSQL takes `value` as a value of `type`: a value it would refuse is a 400 here, never a 500. */
function validValue(type: KeyType, value: string): boolean {
  switch (type) {
    case 'bigint':
      return BIGINT.test(value) && BigInt(value) <= MAX_BIGINT;
    case 'numeric':
      return NUMERIC.test(value);
    case 'text':
      // PostgreSQL's text holds no U+0000, and UTF-8 no lone surrogate.
      return value.length <= MAX_TEXT_LENGTH && !value.includes('\u0000') && !/\p{Cs}/u.test(value);
    case 'timestamptz':
      return validTimestamp(value);
  }
}

function validTimestamp(value: string): boolean {
  const match = TIMESTAMP.exec(value);
  if (match === null) return false;
  const [year, month, day, hour, minute, second] = match.slice(1).map(Number) as number[] as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
  return year >= 1 && days !== undefined && day >= 1 && day <= days && hour <= 23 && minute <= 59 && second <= 59;
}

/** The collection pages a response links to (contract §4). */
export interface PageLinks {
  /** The page by number, or absent on a cursor page. */
  readonly page?: number;
  readonly pageSize: number;
  /** `pageCount()` of the collection. */
  readonly pages: number;
  /** The cursor of the next page; absent on the last. */
  readonly cursor?: string;
}

/**
 * The RFC 8288 `Link` value of a page of a collection, and its next page's
 * URL (`meta.next`): each link the same request (path and query, as a
 * relative reference) with another `page` or `cursor` (contract §4). `first`
 * is page 1; `prev` the page before, on a page by number only (a cursor page
 * does not know its number); `next` the cursor after this page's last row,
 * when there is a next page; `last` the last page, when it lies within the
 * depth `page` reaches.
 */
export function paginationLinks(url: URL, links: PageLinks): { readonly header: string; readonly next?: string } {
  const last = Math.max(links.pages, 1);
  const target = (name: 'page' | 'cursor', value: string) => {
    const search = new URLSearchParams(url.search);
    search.delete(name === 'page' ? 'cursor' : 'page');
    search.set(name, value);
    return `${url.pathname}?${search.toString()}`;
  };
  const link = (href: string, rel: string) => `<${href}>; rel="${rel}"`;
  const header = [link(target('page', '1'), 'first')];
  if (links.page !== undefined && links.page > 1)
    header.push(link(target('page', String(Math.min(links.page - 1, last))), 'prev'));
  const next = links.cursor === undefined ? undefined : target('cursor', links.cursor);
  if (next !== undefined) header.push(link(next, 'next'));
  if (last <= maxPage(links.pageSize)) header.push(link(target('page', String(last)), 'last'));
  return { header: header.join(', '), ...(next === undefined ? {} : { next }) };
}

/** 400 `invalid-query` naming each offending parameter the problem lists (contract §4, §11). */
export function invalidQuery(errors: readonly QueryError[]): HttpError {
  const names = [...new Set(listedErrors(errors).listed.map((e) => e.parameter))].join(', ');
  return new HttpError(400, 'invalid-query', { detail: `The query parameters ${names} are invalid.`, errors });
}
