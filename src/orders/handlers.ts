/**
 * The handlers of the order endpoints (contract §4): the two lists, one
 * order, and its creation, replacement, merge patch and deletion, with the
 * ownership rules of §6 and the `If-Match` precondition of §9.
 */
import { principalOf, type RequestContext } from '../pipeline/context.ts';
import { collectionHandler } from '../pipeline/collection.ts';
import { orderScopedConditions, ownerLimit } from '../auth/ownership.ts';
import { where } from '../db/page.ts';
import { validationError } from '../http/json-body.ts';
import { readJsonBody } from '../pipeline/body.ts';
import { jsonResponse, jsonTextResponse } from '../http/json.ts';
import { HttpError } from '../http/problem.ts';
import type { Version } from '../http/negotiation.ts';
import { orderItemRepresentation, orderRepresentation, type ItemRow, type OrderRow } from './representation.ts';
import {
  CreateOrderSchema,
  duplicateProducts,
  nullMembers,
  PatchOrderSchema,
  ReplaceOrderSchema,
  type Item,
} from './rules.ts';
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
import { matchHolds } from '../http/conditional.ts';
import { orderTag } from './etag.ts';
import { ITEM_LIST, ORDER_LIST, orderListSql } from './order-list.ts';

const represent = (row: OrderRow, version: Version) => orderRepresentation(row, version);

/** `GET /orders`: every order, or a customer's own. */
export const listAll = collectionHandler({
  list: ORDER_LIST,
  sql: (ctx, query) => {
    const limit = ownerLimit(principalOf(ctx));
    return orderListSql(query, limit === null ? [] : [limit]);
  },
  represent,
});

/** `GET /users/{id}/orders`: the user is found first, so another customer's path is a 404 before any 400. */
export const listOfUser = collectionHandler({
  list: ORDER_LIST,
  before: async (ctx): Promise<number> => {
    const principal = principalOf(ctx);
    const userId = ctx.params.id as number;
    // Another customer's path is as missing as an unknown user's (contract §6).
    const visible =
      principal.role === 'admin' ? (await ctx.db.opt('GetUser', [userId])) !== undefined : principal.userId === userId;
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
export function getOne(ctx: RequestContext): Promise<Response> {
  const id = ctx.params.id as number;
  const { version, contentType } = ctx;
  // Not an async function (the GET's hot path): what throws here at once, the pipeline answers as a rejection.
  return getOrderJson(ctx.db, id, principalOf(ctx), version).then(({ revision, body }) =>
    jsonTextResponse(body, 200, { etag: orderTag(id, revision, version, contentType) }),
  );
}

/** The tag of the order of a GET, from its revision alone: an If-None-Match is answered without building the order. */
export async function currentTag(ctx: RequestContext): Promise<string> {
  const id = ctx.params.id as number;
  return orderTag(id, await getOrderRevision(ctx.db, id, principalOf(ctx)), ctx.version, ctx.contentType);
}

function itemsOrThrow(items: readonly Item[] | undefined): void {
  if (items === undefined) return;
  const duplicates = duplicateProducts(items);
  if (duplicates.length > 0) throw validationError(duplicates);
}

/** What a POST /orders asks for, with the rules of contract §4 and §6 that need no database; throws a refusal. */
export function orderToCreate(ctx: RequestContext): { customerId: number; items: readonly Item[]; admin: boolean } {
  const principal = principalOf(ctx);
  const body = readJsonBody(ctx, CreateOrderSchema);
  itemsOrThrow(body.items);
  const admin = principal.role === 'admin';
  if (admin) {
    if (body.customerId === undefined)
      throw validationError([{ pointer: '/customerId', detail: 'is required when an admin creates an order' }]);
    return { customerId: body.customerId, items: body.items, admin };
  }
  if (body.customerId !== undefined && body.customerId !== principal.userId) {
    throw new HttpError(403, 'forbidden', { detail: 'A customer may create orders only for themselves.' });
  }
  return { customerId: principal.userId, items: body.items, admin };
}

export async function create(ctx: RequestContext): Promise<Response> {
  const { customerId, items, admin } = orderToCreate(ctx);
  const row = await createOrder(ctx.db, customerId, items, admin);
  return orderResponse(ctx, row, 201, { location: `${ctx.url.pathname}/${row.id}` });
}

/**
 * The `If-Match` precondition of a write (contract §9), checked by the store
 * on the locked row, so the check and the write are atomic: the tag is that
 * of the locked revision in the request's version and media type, as a GET
 * would send. The pipeline parsed `If-Match` (the routes say `ifMatch`), and
 * answered a malformed one with 400 before the handler ran.
 */
function preconditionOf(ctx: RequestContext): Precondition | undefined {
  const list = ctx.conditions.ifMatch;
  if (list === null) return undefined;
  return (locked) => {
    const current = orderTag(locked.id, locked.revision, ctx.version, ctx.contentType);
    if (!matchHolds(list, current)) {
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

export async function replace(ctx: RequestContext): Promise<Response> {
  return change(ctx, readJsonBody(ctx, ReplaceOrderSchema));
}

export async function patch(ctx: RequestContext): Promise<Response> {
  const body = readJsonBody(ctx, PatchOrderSchema, { patch: true, refuse: nullMembers });
  return change(ctx, {
    ...(body.customerId === undefined ? {} : { customerId: body.customerId }),
    ...(body.status === undefined ? {} : { status: body.status }),
    ...(body.items === undefined ? {} : { items: body.items }),
  });
}

export async function remove(ctx: RequestContext): Promise<Response> {
  await deleteOrder(ctx.db, ctx.params.id as number, principalOf(ctx), preconditionOf(ctx));
  return new Response(null, { status: 204 });
}

/**
 * `GET /order-items?orderId=N` (contract §4): the items of orders as a flat collection; a customer sees only the
 * items of their own orders.
 */
export const listItems = collectionHandler({
  list: ITEM_LIST,
  sql: (ctx, query) => {
    const filter = where(orderScopedConditions(principalOf(ctx), query.filters.orderId, 'i.order_id'));
    return {
      list: 'ListOrderItems',
      count: 'CountOrderItems',
      where: filter.sql,
      params: filter.params,
      columns: { id: 'i.id' },
    };
  },
  represent: (row: ItemRow, version) => orderItemRepresentation(row, version),
});
