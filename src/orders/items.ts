/**
 * `GET /order-items?orderId=N` (contract §4): the items of orders as a flat
 * collection. `orderId` is optional for admins and required for customers,
 * who see only the items of their own orders.
 */
import { principalOf, type RouteSpec } from '../pipeline/context.ts';
import { collectionHandler } from '../pipeline/collection.ts';
import { where } from '../db/page.ts';
import { positiveId, type ListSpec } from '../http/list-query.ts';
import { ID_SCHEMA } from '../openapi/atoms.ts';
import { ORDER_ITEM_PAGE, orderItemRepresentation, type ItemRow } from './representation.ts';
import { orderScopedConditions } from '../auth/ownership.ts';

const LIST: ListSpec<'id', { orderId: number }> = {
  sortKeys: ['id'],
  keyTypes: { id: 'bigint' },
  filters: { orderId: positiveId },
};

const listItems = collectionHandler({
  list: LIST,
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

export const orderItemRoutes: readonly RouteSpec[] = [
  {
    method: 'GET',
    pattern: '/order-items',
    auth: 'orders:read',
    cache: 'private',
    handler: listItems,
    doc: {
      summary: 'List order items',
      description: 'A customer must give orderId and sees only the items of their own orders.',
      success: { status: 200, schema: ORDER_ITEM_PAGE },
      list: LIST,
      query: { orderId: { description: 'only the items of this order (required for customers)', schema: ID_SCHEMA } },
    },
  },
];
