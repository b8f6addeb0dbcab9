/** The product catalog (contract §2, §4): public, read-only over HTTP. */
import * as v from 'valibot';
import type { RequestContext, RouteSpec } from '../pipeline/context.ts';
import { collectionHandler } from '../pipeline/collection.ts';
import { jsonResponse } from '../http/json.ts';
import type { ListSpec } from '../http/list-query.ts';
import { HttpError } from '../http/problem.ts';
import type { Version } from '../http/negotiation.ts';
import { Currency, Id, money, Money, MoneyNumber, named, page, Timestamp } from '../openapi/atoms.ts';

export interface ProductRow {
  id: number;
  sku: string;
  name: string;
  /** numeric(12,2) as the driver returns it: a decimal string. */
  price: string;
  currency: string;
  created_at: Date;
}

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
const PRODUCT = { v1: ProductV1, v2: ProductV2 };
const PRODUCT_PAGE = { v1: page('ProductPageV1', ProductV1), v2: page('ProductPageV2', ProductV2) };

type ProductSortKey = 'id' | 'createdAt';
const LIST: ListSpec<ProductSortKey, Record<string, never>> = {
  sortKeys: ['id', 'createdAt'],
  keyTypes: { id: 'bigint', createdAt: 'timestamptz' },
  filters: {},
};
const SORT_COLUMNS: Record<ProductSortKey, string> = { id: 'id', createdAt: 'created_at' };

const listProducts = collectionHandler({
  list: LIST,
  sql: () => ({ list: 'ListProducts', count: 'CountProducts', columns: SORT_COLUMNS }),
  represent: productRepresentation,
});

async function getProduct(ctx: RequestContext): Promise<Response> {
  const row = await ctx.db.one<ProductRow>('GetProduct', [ctx.params.id as number]);
  if (row === undefined) throw new HttpError(404, 'not-found', { detail: `There is no product ${ctx.params.id}.` });
  return jsonResponse(productRepresentation(row, ctx.version));
}

export const productRoutes: readonly RouteSpec[] = [
  {
    method: 'GET',
    pattern: '/products',
    auth: 'public',
    cache: 'public',
    handler: listProducts,
    doc: {
      summary: 'List the product catalog',
      description:
        'Every product, a page at a time, sorted by id or createdAt. Public: no token needed, and cacheable by ' +
        'shared caches (Cache-Control: public).',
      success: { status: 200, schema: PRODUCT_PAGE },
      list: LIST,
    },
  },
  {
    method: 'GET',
    pattern: '/products/{id:int}',
    auth: 'public',
    cache: 'public',
    handler: getProduct,
    doc: {
      summary: 'Get a product',
      description:
        'One product of the catalog with its price (version 1: a number and a currency; version 2: an amount ' +
        'string and a currency). Public and cacheable by shared caches.',
      success: { status: 200, schema: PRODUCT },
    },
  },
];
