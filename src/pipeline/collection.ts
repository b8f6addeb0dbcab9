/**
 * Collections (contract §2, §4): every list route is the same four steps,
 * written once here: parse the query against the route's rules (400
 * `invalid-query` naming each bad parameter), build the page's SQL from
 * fixed fragments, read the page (src/db/page.ts), and answer with the
 * envelope `{data, meta}` and the RFC 8288 `Link` header.
 */
import { fetchPage, type PageRequest, type PageSql } from '../db/page.ts';
import type { Version } from '../http/negotiation.ts';
import type { Handler, RequestContext } from './context.ts';
import { jsonResponse } from '../http/json.ts';
import {
  pageCount,
  paginationLinks,
  parseListQuery,
  type ListQuery,
  type ListSpec,
  invalidQuery,
} from '../http/list-query.ts';

/** The 200 envelope of `data`, with `meta` and the `Link` header. */
export function collectionResponse(
  url: URL,
  data: unknown[],
  total: number,
  page: PageRequest,
  headers: Readonly<Record<string, string>> = {},
): Response {
  const pages = pageCount(total, page.pageSize);
  return jsonResponse({ data, meta: { total, page: page.page, pageSize: page.pageSize, pageCount: pages } }, 200, {
    link: paginationLinks(url, page.page, pages),
    ...headers,
  });
}

/** Parses the collection query of `url` against `spec`, or throws 400 `invalid-query` naming every bad parameter. */
export function listQueryOf<K extends string, F extends Record<string, unknown>>(
  url: URL,
  spec: ListSpec<K, F>,
): ListQuery<K, F> {
  const parsed = parseListQuery(url.searchParams, spec);
  if (parsed.ok) return parsed.value;
  throw invalidQuery(parsed.errors);
}

/** What one list route declares; `collectionHandler()` does the rest. */
export interface Collection<Row, K extends string, F extends Record<string, unknown>, A = undefined> {
  /** Its page size, sort keys and filters. */
  readonly list: ListSpec<K, F>;
  /**
   * Runs before the query is read, so that its refusals come first (403 for
   * a customer, 404 for a missing parent); what it returns goes to `sql`.
   */
  readonly before?: (ctx: RequestContext) => A | Promise<A>;
  /**
   * The statements, fragments and values of the page for this request: the
   * query's filters and the principal's limits as fixed conditions. It may
   * refuse (a customer without `orderId`).
   */
  readonly sql: (ctx: RequestContext, query: ListQuery<K, F>, before: A) => PageSql | Promise<PageSql>;
  /** A row as the request's version represents it. */
  readonly represent: (row: Row, version: Version) => unknown;
}

/** The handler of a list route: parse → SQL → page → envelope. */
export function collectionHandler<Row, K extends string, F extends Record<string, unknown>, A = undefined>(
  collection: Collection<Row, K, F, A>,
): Handler {
  return async (ctx) => {
    const before = (await collection.before?.(ctx)) as A;
    const query = listQueryOf(ctx.url, collection.list);
    const sql = await collection.sql(ctx, query, before);
    const { rows, total } = await fetchPage<Row>(ctx.db, sql, query);
    return collectionResponse(
      ctx.url,
      rows.map((row) => collection.represent(row, ctx.version)),
      total,
      query,
    );
  };
}
