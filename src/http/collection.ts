/**
 * One page of a collection (SPEC §2, §4): runs a list statement that returns
 * the page's rows with the count of all matching rows, and answers with the
 * envelope `{data, meta}` and the RFC 8288 `Link` header.
 */
import type { Database, Param } from '../db/database.ts';
import { jsonResponse } from './json.ts';
import { pageCount, paginationLinks, parseListQuery, type ListQuery, type ListSpec, type QueryError } from './list-query.ts';
import { HttpError, listedErrors } from './problem.ts';

export interface PageRequest {
  readonly page: number;
  readonly pageSize: number;
}

export interface Page<Row> {
  readonly rows: Row[];
  readonly total: number;
}

/** The whitelisted SQL fragments of one list query: never text from a request. */
export interface ListFragments {
  /** The `ORDER BY` list (from `orderBy()`). */
  readonly orderBy: string;
  /** The `WHERE` condition (from `where()`); `TRUE` when absent. */
  readonly where?: string;
  /**
   * The condition of statements that read the total from kept counts rather
   * than counting the rows (their `{{totalWhere}}`): the same filters, with
   * the same parameter numbers, over the counts' table.
   */
  readonly totalWhere?: string;
}

/**
 * Runs `listStatement`, whose rows carry the count of all matching rows as
 * `total_count`, with `params` followed by the page size and offset (its
 * `{{limit}}` and `{{offset}}` placeholders become their parameter numbers).
 * `countStatement` runs only when the page is empty: a page past the last
 * has no row to carry the count. Both get `{{where}}` and, when given,
 * `{{totalWhere}}`.
 */
export async function fetchPage<Row>(
  db: Database,
  listStatement: string,
  countStatement: string,
  fragments: ListFragments,
  params: readonly Param[],
  page: PageRequest,
): Promise<Page<Row>> {
  const offset = (BigInt(page.page) - 1n) * BigInt(page.pageSize);
  const where = fragments.where ?? 'TRUE';
  // Only when given: a statement that needs it and lacks it fails loudly.
  const total = fragments.totalWhere === undefined ? {} : { totalWhere: fragments.totalWhere };
  const rows = await db.composed<Row & { total_count: number }>(
    listStatement,
    { where, ...total, orderBy: fragments.orderBy, limit: `$${params.length + 1}`, offset: `$${params.length + 2}::bigint` },
    [...params, page.pageSize, offset.toString()],
  );
  if (rows.length > 0) return { rows, total: rows[0]!.total_count };
  const [count] = await db.composed<{ total_count: number }>(countStatement, { where, ...total }, params);
  return { rows, total: count?.total_count ?? 0 };
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
  throw invalidQuery(parsed.errors);
}

/** 400 `invalid-query` naming each offending parameter the problem lists (SPEC §4, §11). */
export function invalidQuery(errors: readonly QueryError[]): HttpError {
  const names = [...new Set(listedErrors(errors).listed.map((e) => e.parameter))].join(', ');
  return new HttpError(400, 'invalid-query', { detail: `The query parameters ${names} are invalid.`, errors });
}
