/**
 * One page of a list statement (contract §2, §4): the SQL composition of
 * its filters and sort from fixed fragments, and the read of the page's rows
 * with the count of all matching rows. Nothing from a request reaches the
 * SQL text but the choice among fixed fragments; values travel as parameters.
 */
import type { Db, Param } from './database.ts';

/** A sort key and its direction, as a parsed query gives it. */
export interface Sort<K extends string> {
  readonly key: K;
  readonly descending: boolean;
}

/**
 * The `ORDER BY` list for `sort`, from a fixed map of sort keys to SQL
 * expressions: nothing from the request reaches the SQL text but the choice
 * among those. `id` ends the list as the tie-breaker, so pages never overlap;
 * it runs in the direction of the last key, so that one index on
 * (key, id), read forwards or backwards, delivers the whole order.
 *
 * @example
 * orderBy([{ key: 'createdAt', descending: true }], { id: 'p.id', createdAt: 'p.created_at' })
 * // 'p.created_at DESC, p.id DESC'
 */
export function orderBy<K extends string>(
  sort: readonly Sort<K>[],
  columns: Readonly<Record<K | 'id', string>>,
): string {
  const parts = sort.map((s) => `${columns[s.key]} ${s.descending ? 'DESC' : 'ASC'}`);
  if (!sort.some((s) => s.key === 'id')) parts.push(`${columns.id} ${sort.at(-1)?.descending ? 'DESC' : 'ASC'}`);
  return parts.join(', ');
}

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
  readonly page: number;
  readonly pageSize: number;
}

export interface Page<Row> {
  readonly rows: Row[];
  readonly total: number;
}

/** The statements and whitelisted SQL fragments of one list query: never text from a request. */
export interface PageSql {
  /** The `:many` statement of a page: its rows carry the count of all matching rows as `total_count`. */
  readonly list: string;
  /** The `:many` statement of the count alone, run only when the page is empty (past the last). */
  readonly count: string;
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
  /** The values of `where`'s parameters. */
  readonly params?: readonly Param[];
}

/**
 * Runs `sql.list` with its parameters followed by the page size and offset
 * (its `{{limit}}` and `{{offset}}` placeholders become their parameter
 * numbers). `sql.count` runs only when the page is empty: a page past the
 * last has no row to carry the count. Both get `{{where}}` and, when given,
 * `{{totalWhere}}`.
 */
export async function fetchPage<Row>(db: Db, sql: PageSql, page: PageRequest): Promise<Page<Row>> {
  const params = sql.params ?? [];
  const offset = (BigInt(page.page) - 1n) * BigInt(page.pageSize);
  const where = sql.where ?? 'TRUE';
  // Only when given: a statement that needs it and lacks it fails loudly.
  const total = sql.totalWhere === undefined ? {} : { totalWhere: sql.totalWhere };
  const rows = await db.composed<Row & { total_count: number }>(
    sql.list,
    { where, ...total, orderBy: sql.orderBy, limit: `$${params.length + 1}`, offset: `$${params.length + 2}::bigint` },
    [...params, page.pageSize, offset.toString()],
  );
  if (rows.length > 0) return { rows, total: rows[0]!.total_count };
  const [count] = await db.composed<{ total_count: number }>(sql.count, { where, ...total }, params);
  return { rows, total: count?.total_count ?? 0 };
}
