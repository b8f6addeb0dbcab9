/**
 * The order endpoints (contract §4): the collection with its filters, one order,
 * and its creation, replacement, merge patch and deletion; with the
 * ownership rules of §6.
 */
import { principalOf, type RequestContext, type RouteSpec } from '../pipeline/context.ts';
import { collectionHandler } from '../pipeline/collection.ts';
import { where, type PageSql } from '../db/page.ts';
import { ownerLimit } from '../auth/ownership.ts';
import { validationError } from '../http/json-body.ts';
import { readJsonBody } from '../pipeline/body.ts';
import { jsonResponse, jsonTextResponse } from '../http/json.ts';
import { positiveId, type FilterParser, type ListQuery, type ListSpec } from '../http/list-query.ts';
import type { Param } from '../db/database.ts';
import { HttpError } from '../http/problem.ts';
import type { Version } from '../http/negotiation.ts';
import { ORDER, ORDER_PAGE, orderRepresentation, type OrderRow } from './representation.ts';
import { ID_SCHEMA } from '../openapi/atoms.ts';
import {
  CREATE_ORDER,
  CreateOrderSchema,
  duplicateProducts,
  nullMembers,
  PATCH_ORDER,
  PatchOrderSchema,
  REPLACE_ORDER,
  ReplaceOrderSchema,
  STATUSES,
  type Item,
  type Status,
} from './schema.ts';
import {
  createOrder,
  deleteOrder,
  getOrderJson,
  getOrderRevision,
  updateOrder,
  type OrderChanges,
  type Precondition,
  type StoredOrder,
} from './store.ts';
import { ifMatch, parseTagList } from '../http/conditional.ts';
import { fieldOf } from '../http/node-adapter.ts';
import { orderTag } from './etag.ts';

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
export interface OrderListSql extends PageSql {
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

const represent = (row: OrderRow, version: Version) => orderRepresentation(row, version);

/** `GET /orders`: every order, or a customer's own. */
const listAll = collectionHandler({
  list: ORDER_LIST,
  sql: (ctx, query) => {
    const limit = ownerLimit(principalOf(ctx));
    return orderListSql(query, limit === null ? [] : [limit]);
  },
  represent,
});

/** `GET /users/{id}/orders`: the user is found first, so another customer's path is a 404 before any 400. */
const listOfUser = collectionHandler({
  list: ORDER_LIST,
  before: async (ctx): Promise<number> => {
    const principal = principalOf(ctx);
    const userId = ctx.params.id as number;
    // Another customer's path is as missing as an unknown user's (contract §6).
    const visible =
      principal.role === 'admin' ? (await ctx.db.one('GetUser', [userId])) !== undefined : principal.userId === userId;
    if (!visible) throw new HttpError(404, 'not-found', { detail: `There is no user ${userId}.` });
    return userId;
  },
  sql: (_ctx, query, userId) => orderListSql(query, [userId]),
  represent,
});

/**
 * An order as this request's version and media type represent it, with the
 * tag of its revision (contract §9): the tag `currentTag` finds for a 304, and
 * the one `If-Match` is compared against.
 */
function orderResponse(
  ctx: RequestContext,
  row: StoredOrder,
  status = 200,
  headers: Readonly<Record<string, string>> = {},
): Response {
  return jsonResponse(orderRepresentation(row, ctx.version), status, {
    ...headers,
    etag: orderTag(row.id, row.revision, ctx.version, ctx.contentType),
  });
}

/** One order: the database sends its representation as JSON text, which goes out as it is. */
async function getOne(ctx: RequestContext): Promise<Response> {
  const id = ctx.params.id as number;
  const { revision, body } = await getOrderJson(ctx.db, id, principalOf(ctx), ctx.version);
  return jsonTextResponse(body, 200, { etag: orderTag(id, revision, ctx.version, ctx.contentType) });
}

/** The tag of the order of a GET, from its revision alone: an If-None-Match is answered without building the order. */
async function currentTag(ctx: RequestContext): Promise<string> {
  const id = ctx.params.id as number;
  return orderTag(id, await getOrderRevision(ctx.db, id, principalOf(ctx)), ctx.version, ctx.contentType);
}

function itemsOrThrow(items: readonly Item[] | undefined): void {
  if (items === undefined) return;
  const duplicates = duplicateProducts(items);
  if (duplicates.length > 0) throw validationError(duplicates);
}

async function create(ctx: RequestContext): Promise<Response> {
  const principal = principalOf(ctx);
  const body = readJsonBody(ctx, CreateOrderSchema);
  itemsOrThrow(body.items);
  let customerId: number;
  if (principal.role === 'admin') {
    if (body.customerId === undefined)
      throw validationError([{ pointer: '/customerId', detail: 'is required when an admin creates an order' }]);
    customerId = body.customerId;
  } else {
    if (body.customerId !== undefined && body.customerId !== principal.userId) {
      throw new HttpError(403, 'forbidden', { detail: 'A customer may create orders only for themselves.' });
    }
    customerId = principal.userId;
  }
  const row = await createOrder(ctx.db, customerId, body.items, principal.role === 'admin');
  return orderResponse(ctx, row, 201, { location: `${ctx.url.pathname}/${row.id}` });
}

/**
 * The `If-Match` precondition of a write (contract §9), checked by the store
 * on the locked row, so the check and the write are atomic: the tag is that
 * of the locked revision in the request's version and media type, as a GET
 * would send. A malformed `If-Match` is 400 at once.
 */
function preconditionOf(ctx: RequestContext): Precondition | undefined {
  const header = fieldOf(ctx.request, 'if-match');
  const list = parseTagList(header);
  if (list === null) return undefined;
  if (list === undefined) {
    throw new HttpError(400, 'invalid-header', {
      detail: 'If-Match must be * or a list of entity tags such as "abc".',
    });
  }
  return (locked) => {
    const current = orderTag(locked.id, locked.revision, ctx.version, ctx.contentType);
    if (!ifMatch(header, current)) {
      throw new HttpError(412, 'precondition-failed', {
        detail: `The order has changed: its current entity tag is not in If-Match.`,
      });
    }
  };
}

async function change(ctx: RequestContext, changes: OrderChanges): Promise<Response> {
  itemsOrThrow(changes.items);
  const row = await updateOrder(ctx.db, ctx.params.id as number, principalOf(ctx), changes, preconditionOf(ctx));
  return orderResponse(ctx, row);
}

async function replace(ctx: RequestContext): Promise<Response> {
  return change(ctx, readJsonBody(ctx, ReplaceOrderSchema));
}

async function patch(ctx: RequestContext): Promise<Response> {
  const body = readJsonBody(ctx, PatchOrderSchema, { patch: true, refuse: nullMembers });
  return change(ctx, {
    ...(body.customerId === undefined ? {} : { customerId: body.customerId }),
    ...(body.status === undefined ? {} : { status: body.status }),
    ...(body.items === undefined ? {} : { items: body.items }),
  });
}

async function remove(ctx: RequestContext): Promise<Response> {
  await deleteOrder(ctx.db, ctx.params.id as number, principalOf(ctx), preconditionOf(ctx));
  return new Response(null, { status: 204 });
}

const ORDER_QUERY = {
  status: { description: 'only orders with this status', schema: { type: 'string', enum: [...STATUSES] } },
  customerId: { description: "only this customer's orders", schema: ID_SCHEMA },
  minTotal: {
    description: 'only orders whose total is at least this (up to 10 digits and 2 decimals)',
    schema: { type: 'string', pattern: '^[0-9]{1,10}(\\.[0-9]{1,2})?$' },
  },
};
const WRITE_PROBLEMS = [
  [409, 'invalid-transition'],
  [409, 'order-not-editable'],
  [412, 'precondition-failed'],
  [422, 'validation'],
] as const;

export const orderRoutes: readonly RouteSpec[] = [
  {
    method: 'GET',
    pattern: '/orders',
    auth: 'orders:read',
    cache: 'private',
    handler: listAll,
    doc: {
      summary: 'List orders',
      description: 'A customer sees only their own orders.',
      success: { status: 200, schema: ORDER_PAGE },
      list: ORDER_LIST,
      query: ORDER_QUERY,
    },
  },
  {
    method: 'POST',
    pattern: '/orders',
    auth: 'orders:write',
    handler: create,
    doc: {
      summary: 'Create a pending order',
      description:
        'Customers may omit customerId or give their own; admins must give one. Unit prices are captured from ' +
        'the catalog.',
      success: { status: 201, schema: ORDER },
      body: CREATE_ORDER,
      problems: [[422, 'validation']],
    },
  },
  {
    method: 'GET',
    pattern: '/orders/{id:int}',
    auth: 'orders:read',
    cache: 'private',
    handler: getOne,
    currentTag,
    doc: {
      summary: 'Get an order with its items',
      description:
        "A customer reads only their own orders: another customer's order answers 404, as a missing one. The " +
        "ETag comes from the order's revision, so If-None-Match is answered without building the order.",
      success: { status: 200, schema: ORDER },
    },
  },
  {
    method: 'PUT',
    pattern: '/orders/{id:int}',
    auth: 'orders:write',
    handler: replace,
    doc: {
      summary: 'Replace the writable members of an order',
      description:
        'customerId, status and items, all required. The status may change only as the order states allow (409 ' +
        'invalid-transition), items only while the order is pending (409 order-not-editable). With If-Match, the ' +
        'write happens only if the order is unchanged (else 412).',
      success: { status: 200, schema: ORDER },
      body: REPLACE_ORDER,
      ifMatch: true,
      problems: WRITE_PROBLEMS,
    },
  },
  {
    method: 'PATCH',
    pattern: '/orders/{id:int}',
    auth: 'orders:write',
    handler: patch,
    doc: {
      summary: 'Change an order (JSON Merge Patch)',
      description:
        'An RFC 7396 merge patch of status, items or customerId (admin only); null members are refused (422). ' +
        'The same rules as a replacement apply; setting the status the order already has succeeds and changes ' +
        'nothing.',
      success: { status: 200, schema: ORDER },
      body: PATCH_ORDER,
      ifMatch: true,
      problems: WRITE_PROBLEMS,
    },
  },
  {
    method: 'DELETE',
    pattern: '/orders/{id:int}',
    auth: 'orders:write',
    handler: remove,
    doc: {
      summary: 'Delete an order without payments',
      description:
        'An order that has a payment cannot be deleted (409 order-has-payments): cancel it instead. A repeated ' +
        'delete answers 404.',
      success: { status: 204 },
      ifMatch: true,
      problems: [
        [409, 'order-has-payments'],
        [412, 'precondition-failed'],
      ],
    },
  },
  {
    method: 'GET',
    pattern: '/users/{id:int}/orders',
    auth: 'orders:read',
    cache: 'private',
    handler: listOfUser,
    doc: {
      summary: "List one user's orders",
      description:
        'The orders of user id, with the same filters and sort keys as GET /orders. A customer may list only ' +
        'their own.',
      success: { status: 200, schema: ORDER_PAGE },
      list: ORDER_LIST,
      query: ORDER_QUERY,
    },
  },
];
