/**
 * `GET /order-items?orderId=N` (SPEC §4): the items of orders as a flat
 * collection. `orderId` is optional for admins and required for customers,
 * who see only the items of their own orders.
 */
import { principalOf, type RequestContext, type RouteSpec } from '../app.ts';
import { collectionResponse, fetchPage, invalidQuery, listQueryOf } from '../http/collection.ts';
import { orderBy, where, type Condition, type ListSpec } from '../http/list-query.ts';
import { ID_SCHEMA, positiveId } from './orders.ts';
import { orderItemRepresentation, type ItemRow } from './representation.ts';
import { ownerLimit } from './store.ts';

const LIST: ListSpec<'id', { orderId: number }> = { sortKeys: ['id'], filters: { orderId: positiveId } };

async function listItems(ctx: RequestContext): Promise<Response> {
  const principal = principalOf(ctx);
  const query = listQueryOf(ctx.url, LIST);
  const owner = ownerLimit(principal);
  const { orderId } = query.filters;
  if (owner !== null && orderId === undefined) {
    throw invalidQuery([{ parameter: 'orderId', detail: 'is required for customers' }]);
  }
  const conditions: Condition[] = [];
  if (owner !== null) conditions.push({ sql: (p) => `o.customer_id = ${p}`, value: owner });
  if (orderId !== undefined) conditions.push({ sql: (p) => `i.order_id = ${p}`, value: orderId });
  const filter = where(conditions);
  const { rows, total } = await fetchPage<ItemRow>(ctx.services.db, 'ListOrderItems', 'CountOrderItems', { where: filter.sql, orderBy: orderBy(query.sort, { id: 'i.id' }) }, filter.params, query);
  return collectionResponse(ctx.url, rows.map((row) => orderItemRepresentation(row, ctx.version)), total, query);
}

export const orderItemRoutes: readonly RouteSpec[] = [
  {
    method: 'GET', pattern: '/order-items', auth: 'orders:read', cache: 'private', handler: listItems,
    doc: {
      summary: 'List order items',
      description: 'A customer must give orderId and sees only the items of their own orders.',
      success: { status: 200, schema: { v1: 'OrderItemPageV1', v2: 'OrderItemPageV2' } },
      list: LIST,
      query: { orderId: { description: 'only the items of this order (required for customers)', schema: ID_SCHEMA } },
    },
  },
];
