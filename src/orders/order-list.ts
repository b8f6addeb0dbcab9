/**
 * The order list's rules and SQL (contract §4): the filters and sort keys a
 * query may name, and the whitelisted fragments they become in
 * `sql/queries/orders.sql`'s list statements. Pure; shared by `GET /orders`
 * and `GET /users/{id}/orders`.
 */
import { where, type PageSql } from '../db/page.ts';
import { positiveId, type FilterParser, type ListQuery, type ListSpec } from '../http/list-query.ts';
import type { Param } from '../db/database.ts';
import { STATUSES, type Status } from './rules.ts';

// numeric(12,2) holds at most 10 integer digits; more can never match a total.
const DECIMAL = /^[0-9]{1,10}(\.[0-9]{1,2})?$/;

const status: FilterParser<Status> = (value) =>
  (STATUSES as readonly string[]).includes(value)
    ? { value: value as Status }
    : { error: `must be one of ${STATUSES.join(', ')}` };

const minTotal: FilterParser<string> = (value) =>
  DECIMAL.test(value)
    ? { value }
    : { error: 'must be a non-negative decimal with at most 2 decimal places, such as 100 or 49.95' };

export type OrderSortKey = 'id' | 'status' | 'createdAt' | 'updatedAt' | 'total';
export interface OrderFilters extends Record<string, unknown> {
  status: Status;
  customerId: number;
  minTotal: string;
}

export const ORDER_LIST: ListSpec<OrderSortKey, OrderFilters> = {
  sortKeys: ['id', 'status', 'createdAt', 'updatedAt', 'total'],
  keyTypes: { id: 'bigint', status: 'text', createdAt: 'timestamptz', updatedAt: 'timestamptz', total: 'numeric' },
  filters: { status, customerId: positiveId, minTotal },
};
const SORT_COLUMNS: Record<OrderSortKey, string> = {
  id: 'o.id',
  status: 'o.status',
  createdAt: 'o.created_at',
  updatedAt: 'o.updated_at',
  total: 'o.total',
};

/** One order filter's condition over the orders `o`, and over the kept counts `c` when they can answer it. */
interface OrderFilterSql {
  readonly rows: (placeholder: string) => string;
  readonly counts?: (placeholder: string) => string;
}
const CUSTOMER: OrderFilterSql = { rows: (p) => `o.customer_id = ${p}`, counts: (p) => `c.customer_id = ${p}` };
const STATUS: OrderFilterSql = { rows: (p) => `o.status = ${p}`, counts: (p) => `c.status = ${p}` };
// The counts know nothing of totals: a minTotal list counts its rows.
const MIN_TOTAL: OrderFilterSql = { rows: (p) => `o.total >= ${p}::numeric` };
/** The counter rows of every customer together (migration 0007). */
const ALL_CUSTOMERS = 'c.customer_id = 0';

/** The statements and fragments of one order list (sql/queries/orders.sql). */
export interface OrderListSql extends PageSql<'ListOrders' | 'ListOrdersKeptTotal'> {
  readonly where: string;
  readonly params: Param[];
  /**
   * `ListOrdersKeptTotal` when the total can be read from the kept counts, else `ListOrders`, which counts the rows.
   */
  readonly list: 'ListOrders' | 'ListOrdersKeptTotal';
  /** The statement for the total when the page is past the last. */
  readonly count: 'CountOrders' | 'SumOrderCounts';
  /** The filters over the kept counts `c`, numbered as in `where`; only with `ListOrdersKeptTotal`. */
  readonly totalWhere?: string;
}

/**
 * The SQL fragments and values of one order list: `owners` (a customer's own
 * id, or the user of the path) and the query's filters become fixed
 * conditions, its sort the fixed column map. When every condition is a
 * customer or a status, the total comes from the kept counts (contract §2's
 * exact `meta.total` from a few counter rows). A status filter pins the
 * `status` sort key: every row has that status, so a cursor's keyset leaves
 * it out and the index on (status, next key, id) serves the rest. Pure;
 * nothing from the request reaches the SQL text.
 */
export function orderListSql(query: ListQuery<OrderSortKey, OrderFilters>, owners: readonly number[]): OrderListSql {
  const filters: [OrderFilterSql, Param][] = owners.map((owner) => [CUSTOMER, owner]);
  const { customerId, status: wanted, minTotal: atLeast } = query.filters;
  if (customerId !== undefined) filters.push([CUSTOMER, customerId]);
  if (wanted !== undefined) filters.push([STATUS, wanted]);
  if (atLeast !== undefined) filters.push([MIN_TOTAL, atLeast]);
  const rows = where(filters.map(([f, value]) => ({ sql: f.rows, value })));
  const sorted = {
    where: rows.sql,
    columns: SORT_COLUMNS,
    params: rows.params,
    ...(wanted === undefined ? {} : { pinned: ['status'] }),
  };
  if (!filters.every(([f]) => f.counts !== undefined)) return { ...sorted, list: 'ListOrders', count: 'CountOrders' };
  // Same conditions in the same order: the same parameter numbers as `where`.
  const counts = where(filters.map(([f, value]) => ({ sql: f.counts as (p: string) => string, value })));
  // With no customer condition, the rows that count every customer.
  const anyCustomer = !filters.some(([f]) => f === CUSTOMER);
  const totalWhere = !anyCustomer
    ? counts.sql
    : counts.sql === 'TRUE'
      ? ALL_CUSTOMERS
      : `${ALL_CUSTOMERS} AND ${counts.sql}`;
  return { ...sorted, list: 'ListOrdersKeptTotal', count: 'SumOrderCounts', totalWhere };
}

/** `GET /order-items`: its one filter, `orderId` (required for customers, in the handler). */
export const ITEM_LIST: ListSpec<'id', { orderId: number }> = {
  sortKeys: ['id'],
  keyTypes: { id: 'bigint' },
  filters: { orderId: positiveId },
};
