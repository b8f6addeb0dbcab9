/**
 * Collections (contract §2, §4): every list route is the same four steps, written once here: parse the query
 * (400 `invalid-query`), build the page's SQL from fixed fragments, read the page (src/db/page.ts), and answer
 * with the envelope `{data, meta}` and the RFC 8288 `Link` header, whose `next` is a cursor.
 */
import type { CursorKeys } from '../db/keys.ts';
import { fetchPage, type ListOf, type PageSql } from '../db/page.ts';
import type { Version } from '../http/negotiation.ts';
import type { Handler, RequestContext } from './context.ts';
import { jsonResponse } from '../http/json.ts';
import { invalidQuery, parseListQuery, type ListQuery, type ListSpec } from '../http/list-query.ts';
import { encodeCursor } from '../http/cursor.ts';
import { pageCount, paginationLinks } from '../http/page-links.ts';
import { sortOrder } from '../http/sort-order.ts';

/** A page as `collectionResponse()` describes it. */
export interface PageOf {
  /** The number of the page, a cursor page's included (the seed's envelope on every page). */
  readonly page: number;
  readonly pageSize: number;
  /** The cursor of the next page; absent on the last. */
  readonly cursor?: string;
}

/** The 200 envelope of `data`, with `meta` and the `Link` header. */
export function collectionResponse(
  url: URL,
  data: unknown[],
  total: number,
  page: PageOf,
  headers: Readonly<Record<string, string>> = {},
): Response {
  const pages = pageCount(total, page.pageSize);
  const links = paginationLinks(url, { ...page, pages });
  const meta = {
    total,
    page: page.page,
    pageSize: page.pageSize,
    pageCount: pages,
    ...(links.next === undefined ? {} : { next: links.next }),
  };
  return jsonResponse({ data, meta }, 200, { link: links.header, ...headers });
}

/** A cursor's collection: the path without its version prefix (a cursor of `/v1/orders` serves `/v2/orders`). */
export function collectionOf(url: URL): string {
  return url.pathname.replace(/^\/v[12](?=\/)/, '');
}

/**
 * The collection query of `url` (its cursor opened for `principal`), or 400 `invalid-query` naming every bad
 * parameter. A cursor no key opens is tried again after a reload: another process may have rotated the keys.
 */
export async function listQueryOf<K extends string, F extends Record<string, unknown>>(
  url: URL,
  spec: ListSpec<K, F>,
  cursors: CursorKeys,
  principal: string,
): Promise<ListQuery<K, F>> {
  const parse = () => parseListQuery(url.searchParams, spec, collectionOf(url), { keys: cursors.keys, principal });
  let parsed = parse();
  if (!parsed.ok && parsed.unopened === true) {
    await cursors.reload();
    parsed = parse();
  }
  if (parsed.ok) return parsed.value;
  throw invalidQuery(parsed.errors);
}

/** Who a cursor is given to: the principal, or anyone on a public collection. */
export function cursorPrincipal(ctx: RequestContext): string {
  return ctx.principal === undefined ? 'anyone' : `user ${ctx.principal.userId}`;
}

/** What one list route declares; `collectionHandler()` does the rest. */
export interface Collection<Row, K extends string, F extends Record<string, unknown>, A = undefined> {
  readonly list: ListSpec<K, F>;
  /** Runs before the query is read, so its refusals (403, a missing parent) come first; its result goes to `sql`. */
  readonly before?: (ctx: RequestContext) => A | Promise<A>;
  /** The page's SQL: filters and the principal's limits as fixed conditions. It may refuse. */
  readonly sql: (
    ctx: RequestContext,
    query: ListQuery<K, F>,
    before: A,
  ) => PageSql<ListOf<Row>> | Promise<PageSql<ListOf<Row>>>;
  /** A row as the request's version represents it: the page statement's rows must have what it reads. */
  readonly represent: (row: Row, version: Version) => unknown;
}

/** The handler of a list route: parse → SQL → page → envelope. */
export function collectionHandler<Row, K extends string, F extends Record<string, unknown>, A = undefined>(
  collection: Collection<Row, K, F, A>,
): Handler {
  return async (ctx) => {
    const before = (await collection.before?.(ctx)) as A;
    const { cursorKeys } = ctx.services;
    const principal = cursorPrincipal(ctx);
    const query = await listQueryOf(ctx.url, collection.list, cursorKeys, principal);
    const sql = await collection.sql(ctx, query, before);
    const order = sortOrder(query.sort).map((k) => ({ ...k, type: collection.list.keyTypes[k.key] }));
    const position = query.after === undefined ? { page: query.page } : { after: query.after };
    const { rows, total, next } = await fetchPage(ctx.db, sql, { pageSize: query.pageSize, order, ...position });
    const cursor =
      next === undefined
        ? undefined
        : encodeCursor(
            cursorKeys.keys[0] as Uint8Array,
            collectionOf(ctx.url),
            { ...query, principal },
            next,
            query.page + 1,
          );
    return collectionResponse(
      ctx.url,
      rows.map((row) => collection.represent(row, ctx.version)),
      total,
      { pageSize: query.pageSize, page: query.page, ...(cursor === undefined ? {} : { cursor }) },
    );
  };
}
