/**
 * One page of a list statement (contract §2, §4): the SQL composition of its
 * filters, sort and keyset from fixed fragments (the order's own fragments
 * come from sort-sql.ts), and the read of the page's rows with the count of
 * all matching rows. A page is either a page by number (an OFFSET, at most
 * 10,000 rows deep) or a cursor page (a keyset condition, no OFFSET: an index
 * range at any depth). Nothing from a request reaches the SQL text but the
 * choice among fixed fragments; values travel as parameters.
 */
import type { Db, NamesOf, Param, RowOf } from './database.ts';
import { keyset, orderBy, sortKey, type OrderKey } from './sort-sql.ts';

/** A filter condition: a fixed SQL fragment taking one parameter, and the value for it. */
export interface Condition {
  /** Builds the fragment around the parameter's placeholder, e.g. `(p) => \`o.status = ${p}\``. */
  readonly sql: (placeholder: string) => string;
  readonly value: Param;
}

/**
 * Joins `conditions` with AND, numbering their parameters from `$1`: the
 * `WHERE` text (only the fixed fragments) and the values to pass with it.
 *
 * @example
 * where([{ sql: (p) => `o.status = ${p}`, value: 'paid' }]) // { sql: 'o.status = $1', params: ['paid'] }
 */
export function where(conditions: readonly Condition[]): { sql: string; params: Param[] } {
  if (conditions.length === 0) return { sql: 'TRUE', params: [] };
  return {
    sql: conditions.map((c, i) => c.sql(`$${i + 1}`)).join(' AND '),
    params: conditions.map((c) => c.value),
  };
}

export interface PageRequest {
  readonly pageSize: number;
  /** The order (`sortOrder()` of the query's sort): `id` last, each key with its type. */
  readonly order: readonly OrderKey[];
  /** The page by number: an OFFSET, which contract §4 keeps within 10,000 rows. */
  readonly page?: number;
  /** A cursor page: the keyset position it continues after (a value per key of `order`); no OFFSET. */
  readonly after?: readonly string[];
}

export interface Page<Row> {
  readonly rows: Row[];
  readonly total: number;
  /** The keyset position of the last row when there is a next page (its cursor's values); absent on the last. */
  readonly next?: readonly string[];
}

/** The statements of a page, and of its count alone. */
export type ListName = NamesOf<'many', true>;
export type CountName = NamesOf<'one', true>;
/** The page statements whose rows have everything `Row` reads. */
export type ListOf<Row> = { [N in ListName]: RowOf<N> extends Row ? N : never }[ListName];

/** The statements and whitelisted SQL fragments of one list query: never text from a request. */
export interface PageSql<List extends ListName = ListName> {
  /** The `:many` statement of a page: its rows carry the count of all matching rows as `total_count`. */
  readonly list: List;
  /** The `:one` statement of the count alone, run only when the page is empty (past the last). */
  readonly count: CountName;
  /** The SQL of each sort key, `id` included: a fixed map, for the `ORDER BY`, the keyset and `sort_key`. */
  readonly columns: Readonly<Record<string, string>>;
  /** The `WHERE` condition (from `where()`); `TRUE` when absent. */
  readonly where?: string;
  /**
   * The condition of statements that read the total from kept counts rather
   * than counting the rows (their `{{totalWhere}}`): the same filters, with
   * the same parameter numbers, over the counts' table.
   */
  readonly totalWhere?: string;
  /** The values of `where`'s parameters. */
  readonly params?: readonly Param[];
  /**
   * Sort keys that an equality filter fixes (every row has one value): left
   * out of the keyset, so that an index on the filter's column and the next
   * keys serves it as one range.
   */
  readonly pinned?: readonly string[];
}

/**
 * The fragments and parameters of `sql.list` for `request`: `{{where}}`
 * (and `{{totalWhere}}` when given) with the filters' parameters first, then
 * `{{after}}` (the keyset on a cursor page, else `TRUE`), `{{orderBy}}`,
 * `{{sortKey}}`, `{{limit}}` (one row more than the page, to know whether a
 * next page exists) and `{{offset}}` (0 on a cursor page).
 */
export function pageStatement(
  sql: PageSql,
  request: PageRequest,
): { fragments: Record<string, string>; params: Param[] } {
  const params: Param[] = [...(sql.params ?? [])];
  const where = sql.where ?? 'TRUE';
  // Only when given: a statement that needs it and lacks it fails loudly.
  const total = sql.totalWhere === undefined ? {} : { totalWhere: sql.totalWhere };
  const after =
    request.after === undefined
      ? { sql: 'TRUE', params: [] }
      : keyset(request.order, sql.columns, request.after, params.length + 1, sql.pinned);
  params.push(...after.params, request.pageSize + 1);
  const limit = `$${params.length}`;
  let offset = '0';
  if (request.after === undefined) {
    params.push(((BigInt(request.page ?? 1) - 1n) * BigInt(request.pageSize)).toString());
    offset = `$${params.length}::bigint`;
  }
  const fragments = {
    where,
    ...total,
    after: after.sql,
    orderBy: orderBy(request.order, sql.columns),
    sortKey: sortKey(request.order, sql.columns),
    limit,
    offset,
  };
  return { fragments, params };
}

/**
 * Runs `sql.list` as `pageStatement()` composes it. `sql.count` runs only
 * when the page is empty: a page past the last has no row to carry the
 * count. Both get `{{where}}` and, when given, `{{totalWhere}}`.
 */
export async function fetchPage<Row>(db: Db, sql: PageSql<ListOf<Row>>, request: PageRequest): Promise<Page<Row>> {
  const { fragments, params } = pageStatement(sql, request);
  // ListOf<Row> holds only statements whose rows are Rows, which the compiler cannot follow through the generic.
  const rows = (await db.composed(sql.list, fragments, params)) as (Row & RowOf<ListName>)[];
  const page = rows.slice(0, request.pageSize);
  const last = rows.length > request.pageSize ? page.at(-1) : undefined;
  if (page.length > 0)
    return { rows: page, total: rows[0]!.total_count, ...(last === undefined ? {} : { next: last.sort_key }) };
  const where = {
    where: fragments.where as string,
    ...(sql.totalWhere === undefined ? {} : { totalWhere: sql.totalWhere }),
  };
  const [count] = await db.composed(sql.count, where, sql.params ?? []);
  return { rows: page, total: count?.total_count ?? 0 };
}
