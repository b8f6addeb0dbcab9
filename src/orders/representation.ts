/**
 * Orders and order items as versions 1 and 2 represent them (SPEC §2): one
 * serializer per version, the same shape alone and in a collection. Money
 * arrives from SQL as a decimal string and stays one in v2; v1 shows it as a
 * JSON number (the decimal's shortest form: "59.90" is 59.9).
 */
import type { Status } from './schema.ts';

export interface ItemJson {
  id: number;
  orderId: number;
  productId: number;
  qty: number;
  unitPrice: string;
}

export interface OrderRow {
  id: number;
  customer_id: number;
  status: Status;
  currency: string;
  total: string;
  created_at: Date;
  updated_at: Date;
  items: ItemJson[];
}

export interface ItemRow {
  id: number;
  order_id: number;
  product_id: number;
  qty: number;
  unit_price: string;
  currency: string;
}

const money = (amount: string, currency: string) => ({ amount, currency });

function itemRepresentation(item: ItemJson, currency: string, version: 1 | 2) {
  return {
    id: item.id,
    orderId: item.orderId,
    productId: item.productId,
    qty: item.qty,
    unitPrice: version === 1 ? Number(item.unitPrice) : money(item.unitPrice, currency),
  };
}

/** The order as `version` represents it. */
export function orderRepresentation(row: OrderRow, version: 1 | 2) {
  const items = row.items.map((item) => itemRepresentation(item, row.currency, version));
  if (version === 1) {
    return {
      id: row.id, customerId: row.customer_id, status: row.status, currency: row.currency,
      total: Number(row.total), items, createdAt: row.created_at, updatedAt: row.updated_at,
    };
  }
  return {
    id: row.id, customerId: row.customer_id, status: row.status,
    total: money(row.total, row.currency), items, createdAt: row.created_at, updatedAt: row.updated_at,
  };
}

/** An order item from the `/order-items` collection, in the shape it has inside its order. */
export function orderItemRepresentation(row: ItemRow, version: 1 | 2) {
  return itemRepresentation(
    { id: row.id, orderId: row.order_id, productId: row.product_id, qty: row.qty, unitPrice: row.unit_price },
    row.currency,
    version,
  );
}
