/**
 * `GET /order-items?orderId=N` (SPEC §4): the items of orders as a flat
 * collection. `orderId` is optional for admins and required for customers,
 * who see only the items of their own orders.
 */
import { principalOf, type RequestContext, type RouteSpec } from '../app.ts';
import { collectionResponse, fetchPage, listQueryOf } from '../http/collection.ts';
import { orderBy, where, type ListSpec } from '../http/list-query.ts';
import { ID_SCHEMA, positiveId } from './orders.ts';
import { orderItemRepresentation, type ItemRow } from './representation.ts';
import { orderScopedConditions } from './store.ts';

const LIST: ListSpec<'id', { orderId: number }> = { sortKeys: ['id'], filters: { orderId: positiveId } };

async function listItems(ctx: RequestContext): Promise<Response> {
  const query = listQueryOf(ctx.url, LIST);
  const filter = where(orderScopedConditions(principalOf(ctx), query.filters.orderId, 'i.order_id'));
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
