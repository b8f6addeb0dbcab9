/** Products as versions 1 and 2 represent them (contract §2), and their schemas in the OpenAPI document. */
import * as v from 'valibot';
import type { RowOf } from '../db/database.ts';
import type { Version } from '../http/negotiation.ts';
import { Currency, Id, money, Money, MoneyNumber, named, page, Timestamp } from '../openapi/atoms.ts';

/** A product as its statements give it (the price a decimal string: numeric(12,2) as the driver returns it). */
export type ProductRow = RowOf<'GetProduct'>;

/** The product as version `version` represents it (contract §2). */
export function productRepresentation(row: ProductRow, version: Version) {
  const common = { id: row.id, sku: row.sku, name: row.name };
  return version === 1
    ? { ...common, price: money(row.price, row.currency, version), currency: row.currency, createdAt: row.created_at }
    : { ...common, price: money(row.price, row.currency, version), createdAt: row.created_at };
}

const ProductV1 = named(
  'ProductV1',
  v.strictObject({
    id: Id,
    sku: v.string(),
    name: v.string(),
    price: MoneyNumber,
    currency: Currency,
    createdAt: Timestamp,
  }),
);
const ProductV2 = named(
  'ProductV2',
  v.strictObject({
    id: Id,
    sku: v.string(),
    name: v.string(),
    price: Money,
    createdAt: Timestamp,
  }),
);
export const PRODUCT = { v1: ProductV1, v2: ProductV2 };
export const PRODUCT_PAGE = { v1: page('ProductPageV1', ProductV1), v2: page('ProductPageV2', ProductV2) };
