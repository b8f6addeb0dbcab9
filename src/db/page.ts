/**
 * One page of a list statement (contract §4), composed from fixed fragments (sort-sql.ts), with the count of all
 * matching rows. A page by number is an OFFSET; a cursor page is a keyset condition, an index range at any depth.
 */
import type { Db, NamesOf, Param, RowOf } from './database.ts';
import { keyset, orderBy, sortKey, type OrderKey } from './sort-sql.ts';

/** A filter condition: a fixed SQL fragment taking one parameter, and the value for it. */
export interface Condition {
  readonly sql: (placeholder: string) => string;
  readonly value: Param;
}

/** Joins `conditions` with AND, numbering their parameters from `$1`. */
export function where(conditions: readonly Condition[]): { sql: string; params: Param[] } {
  if (conditions.length === 0) return { sql: 'TRUE', params: [] };
  return {
    sql: conditions.map((c, i) => c.sql(`$${i + 1}`)).join(' AND '),
    params: conditions.map((c) => c.value),
  };
}

export interface PageRequest {
  readonly pageSize: number;
  readonly order: readonly OrderKey[];
  /** The page by number: an OFFSET, which contract §4 keeps within 10,000 rows. */
  readonly page?: number;
  /** A cursor page: the keyset position it continues after. */
  readonly after?: readonly string[];
}

export interface Page<Row> {
  readonly rows: Row[];
  readonly total: number;
  /** The keyset position of the last row, when there is a next page. */
  readonly next?: readonly string[];
}

/** The statements of a page, and of its count. */
export type ListName = NamesOf<'many', true>;
export type CountName = NamesOf<'one', true>;
/** The page statements whose rows have everything `Row` reads. */
export type ListOf<Row> = { [N in ListName]: RowOf<N> extends Row ? N : never }[ListName];

/** The statements and whitelisted SQL fragments of one list query: never text from a request. */
export interface PageSql<List extends ListName = ListName> {
  /** Its rows carry the count of all matching rows as `total_count`. */
  readonly list: List;
  readonly count: CountName;
  /** The SQL of each sort key, `id` included. */
  readonly columns: Readonly<Record<string, string>>;
  readonly where?: string;
  /** For a total read from kept counts: the same filters, with the same parameter numbers, over their table. */
  readonly totalWhere?: string;
  readonly params?: readonly Param[];
  /** Keys an equality filter fixes: left out of the keyset, so that one index on them and the next keys serves it. */
  readonly pinned?: readonly string[];
}

/** The fragments and parameters of `sql.list` for `request`; one row more than the page tells if a next exists. */
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

/** Runs `sql.list`; `sql.count` only when the page is empty, which has no row to carry the count. */
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
