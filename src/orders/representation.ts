/**
 * Orders and order items as versions 1 and 2 represent them (contract §2): one
 * serializer per version, the same shape alone and in a collection, and the
 * schemas that describe them in the OpenAPI document. Money arrives from SQL
 * as a decimal string and stays one in v2; v1 shows it as a JSON number
 * (the decimal's shortest form: "59.90" is 59.9).
 */
import * as v from 'valibot';
import type { RowOf } from '../db/database.ts';
import type { Version } from '../http/negotiation.ts';
import { Currency, Id, money, Money, MoneyNumber, named, page, Timestamp } from '../openapi/atoms.ts';
import { MAX_QTY, STATUSES } from './rules.ts';

export interface ItemJson {
  id: number;
  orderId: number;
  productId: number;
  qty: number;
  unitPrice: string;
}

/**
 * An order as its statements give it, but its revision (the lists have none); `items` is JSON the statement
 * builds, an ItemJson per item by id, which PostgreSQL describes as json.
 */
export type OrderRow = Omit<RowOf<'GetOrder'>, 'revision'>;

/** An order item as the `/order-items` list gives it. */
export type ItemRow = Omit<RowOf<'ListOrderItems'>, 'total_count' | 'sort_key'>;

/** The items of an order's row: the JSON its statement builds, one ItemJson per item (PostgreSQL calls it json). */
export const itemsOf = (row: Pick<OrderRow, 'items'>): ItemJson[] => row.items as ItemJson[];

function itemRepresentation(item: ItemJson, currency: string, version: Version) {
  return {
    id: item.id,
    orderId: item.orderId,
    productId: item.productId,
    qty: item.qty,
    unitPrice: money(item.unitPrice, currency, version),
  };
}

/** The order as `version` represents it. */
export function orderRepresentation(row: OrderRow, version: Version) {
  const items = itemsOf(row).map((item) => itemRepresentation(item, row.currency, version));
  if (version === 1) {
    return {
      id: row.id,
      customerId: row.customer_id,
      status: row.status,
      currency: row.currency,
      total: money(row.total, row.currency, version),
      items,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    };
  }
  return {
    id: row.id,
    customerId: row.customer_id,
    status: row.status,
    total: money(row.total, row.currency, version),
    items,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** An order item from the `/order-items` collection, in the shape it has inside its order. */
export function orderItemRepresentation(row: ItemRow, version: Version) {
  return itemRepresentation(
    { id: row.id, orderId: row.order_id, productId: row.product_id, qty: row.qty, unitPrice: row.unit_price },
    row.currency,
    version,
  );
}

const Qty = v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_QTY));
const OrderStatus = v.picklist(STATUSES);
const OrderItemV1 = named(
  'OrderItemV1',
  v.strictObject({
    id: Id,
    orderId: Id,
    productId: Id,
    qty: Qty,
    unitPrice: MoneyNumber,
  }),
);
const OrderItemV2 = named(
  'OrderItemV2',
  v.strictObject({
    id: Id,
    orderId: Id,
    productId: Id,
    qty: Qty,
    unitPrice: Money,
  }),
);
const OrderV1 = named(
  'OrderV1',
  v.strictObject({
    id: Id,
    customerId: Id,
    status: OrderStatus,
    currency: Currency,
    total: MoneyNumber,
    items: v.array(OrderItemV1.schema),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
  [OrderItemV1],
);
const OrderV2 = named(
  'OrderV2',
  v.strictObject({
    id: Id,
    customerId: Id,
    status: OrderStatus,
    total: Money,
    items: v.array(OrderItemV2.schema),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
  [OrderItemV2],
);

/** The schemas of `orderRepresentation()` and `orderItemRepresentation()`, alone and as a page, per version. */
export const ORDER = { v1: OrderV1, v2: OrderV2 };
export const ORDER_PAGE = { v1: page('OrderPageV1', OrderV1), v2: page('OrderPageV2', OrderV2) };
export const ORDER_ITEM_PAGE = { v1: page('OrderItemPageV1', OrderItemV1), v2: page('OrderItemPageV2', OrderItemV2) };
