/**
 * One page of a collection (SPEC §2, §4): runs a list statement that returns
 * the page's rows with `count(*) OVER ()` as `total`, and answers with the
 * envelope `{data, meta}` and the RFC 8288 `Link` header.
 */
import type { Database, Param } from '../db/database.ts';
import { jsonResponse } from './json.ts';
import { pageCount, paginationLinks, parseListQuery, type ListQuery, type ListSpec } from './list-query.ts';
import { HttpError } from './problem.ts';

export interface PageRequest {
  readonly page: number;
  readonly pageSize: number;
}

export interface Page<Row> {
  readonly rows: Row[];
  readonly total: number;
}

/**
 * Runs `listStatement` with `params` followed by the page size and offset,
 * and `countStatement` with `params` only when the page is empty (a page past
 * the last carries no window count).
 */
export async function fetchPage<Row>(
  db: Database,
  listStatement: string,
  countStatement: string,
  orderBy: string,
  params: readonly Param[],
  page: PageRequest,
): Promise<Page<Row>> {
  const offset = (BigInt(page.page) - 1n) * BigInt(page.pageSize);
  const rows = await db.composed<Row & { total: number }>(listStatement, { orderBy }, [...params, page.pageSize, offset.toString()]);
  if (rows.length > 0) return { rows, total: rows[0]!.total };
  const count = await db.one<{ total: number }>(countStatement, params);
  return { rows, total: count?.total ?? 0 };
}

/** The 200 envelope of `data`, with `meta` and the `Link` header. */
export function collectionResponse(url: URL, data: unknown[], total: number, page: PageRequest, headers: Readonly<Record<string, string>> = {}): Response {
  const pages = pageCount(total, page.pageSize);
  return jsonResponse(
    { data, meta: { total, page: page.page, pageSize: page.pageSize, pageCount: pages } },
    200,
    { link: paginationLinks(url, page.page, pages), ...headers },
  );
}

/** Parses the collection query of `url` against `spec`, or throws 400 `invalid-query` naming every bad parameter. */
export function listQueryOf<K extends string, F extends Record<string, unknown>>(url: URL, spec: ListSpec<K, F>): ListQuery<K, F> {
  const parsed = parseListQuery(url.searchParams, spec);
  if (parsed.ok) return parsed.value;
  const names = [...new Set(parsed.errors.map((e) => e.parameter))].join(', ');
  throw new HttpError(400, 'invalid-query', { detail: `The query parameters ${names} are invalid.`, errors: parsed.errors });
}
