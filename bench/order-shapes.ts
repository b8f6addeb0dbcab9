/**
 * The order lists of the bench's plan studies, composed by the same code the
 * handlers use (src/orders/order-list.ts, src/db/page.ts): a list by its query
 * string and owners, its first page or the page after a keyset position, as
 * one statement text with its parameters. Shared by bench/explain.ts (the
 * plans and the sequential-scan check) and bench/indexes.ts (what each index
 * serves).
 */
import type { Database, Param } from '../src/db/database.ts';
import { parseListQuery, type ListQuery } from '../src/http/list-query.ts';
import { sortOrder } from '../src/http/sort-order.ts';
import { pageStatement, type PageRequest, type PageSql } from '../src/db/page.ts';
import { ORDER_LIST, orderListSql, type OrderFilters, type OrderSortKey } from '../src/orders/order-list.ts';

export interface Shape {
  label: string;
  text: string;
  params: Param[];
}

type OrderQuery = ListQuery<OrderSortKey, OrderFilters>;
/** The key parseListQuery() checks a cursor with: none is parsed here (the positions come from SQL), so any will do. */
const QUERY_KEY = new Uint8Array(32);

/**
 * Every documented filter set, as an admin and within a customer's own
 * orders, with the default order, every sort key in both directions and a
 * few two-key sorts (scenario 5's among them).
 */
export const FILTER_SETS = [
  [],
  ['status'],
  ['customerId'],
  ['minTotal'],
  ['status', 'customerId'],
  ['status', 'minTotal'],
  ['customerId', 'minTotal'],
  ['status', 'customerId', 'minTotal'],
];
export const SORTS = [
  '',
  ...ORDER_LIST.sortKeys.flatMap((key) => [key, `-${key}`]),
  '-total,id',
  'status,-total',
  'status,createdAt',
  '-status,-updatedAt',
];

/** The query string of one filter set (its values for customer `busy`) and sort. */
function listQuery(filters: readonly string[], sort: string, busy: number): string {
  const values: Record<string, string> = { status: 'pending', customerId: String(busy), minTotal: '100' };
  const search = new URLSearchParams(filters.map((f): [string, string] => [f, values[f] as string]));
  if (sort !== '') search.set('sort', sort);
  return search.toString();
}

/**
 * Every documented list: each filter set, as an admin and within customer `busy`'s own orders, each sort; its
 * query string, sort, owners and label.
 */
export function* everyList(busy: number): Generator<{ qs: string; sort: string; owners: number[]; label: string }> {
  for (const filters of FILTER_SETS) {
    for (const owners of [[], [busy]]) {
      for (const sort of SORTS) {
        const qs = listQuery(filters, sort, busy);
        const label = `${owners.length > 0 ? `customer ${busy}: ` : ''}?${decodeURIComponent(qs)}`;
        yield { qs, sort, owners, label };
      }
    }
  }
}

/** The shapes of one database: the order lists as its statements compose them. */
export function orderShapes(db: Database, counting = false) {
  const compose = (statement: string, fragments: Record<string, string>): string =>
    db.statement(statement).text.replace(/\{\{([a-zA-Z]+)\}\}/g, (_, key: string) => {
      const fragment = fragments[key];
      if (fragment === undefined) throw new Error(`${statement} needs {{${key}}}`);
      return fragment;
    });

  /** A list as src/pipeline/collection.ts runs it: by page number, or after `after` (a cursor's values). */
  const listShape = (label: string, sql: PageSql, request: PageRequest, statement = sql.list): Shape => {
    const { fragments, params } = pageStatement(sql, request);
    return { label, text: compose(statement, fragments), params };
  };

  const orderQuery = (qs: string): OrderQuery => {
    const parsed = parseListQuery(new URLSearchParams(qs), ORDER_LIST, '/orders', {
      keys: [QUERY_KEY],
      principal: 'anyone',
    });
    if (!parsed.ok) throw new Error(`${qs}: ${JSON.stringify(parsed.errors)}`);
    return parsed.value;
  };

  const orderOf = (query: OrderQuery) => sortOrder(query.sort).map((k) => ({ ...k, type: ORDER_LIST.keyTypes[k.key] }));

  /** An order list as the handlers run it (`owners`: the customer's own id, or the user of the path). */
  const orderShape = (label: string, qs: string, owners: number[] = [], after?: readonly string[]): Shape => {
    const query = orderQuery(qs);
    const sql = orderListSql(query, owners);
    const position = after === undefined ? { page: query.page ?? 1 } : { after };
    const request = { pageSize: query.pageSize, order: orderOf(query), ...position };
    return listShape(label, sql, request, counting ? 'ListOrders' : sql.list);
  };

  /** The keyset position of the `row`th row (from 1) of an order list, or `undefined` past its last. */
  const positionAt = async (qs: string, owners: number[], row: number): Promise<readonly string[] | undefined> => {
    const query = orderQuery(qs);
    const { text, params } = listShape('', orderListSql(query, owners), {
      pageSize: 1,
      order: orderOf(query),
      page: row,
    });
    const [found] = (await db.sql.unsafe(text, params as never[])) as unknown as { sort_key: string[] }[];
    return found?.sort_key;
  };

  /** How many orders a list holds. */
  const counted = async (qs: string, owners: number[]) => {
    const sql = orderListSql(orderQuery(qs), owners);
    const [row] = (await db.sql.unsafe(
      `SELECT count(*)::int AS n FROM orders o WHERE ${sql.where}`,
      sql.params as never[],
    )) as unknown as [{ n: number }];
    return row.n;
  };

  return { listShape, orderQuery, orderOf, orderShape, positionAt, counted };
}
