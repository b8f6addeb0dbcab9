/** The product catalog (SPEC §2, §4): public, read-only over HTTP. */
import type { RequestContext, RouteSpec } from '../app.ts';
import { collectionResponse, fetchPage, listQueryOf } from '../http/collection.ts';
import { jsonResponse } from '../http/json.ts';
import { orderBy, type ListSpec } from '../http/list-query.ts';
import { HttpError } from '../http/problem.ts';

export interface ProductRow {
  id: number;
  sku: string;
  name: string;
  /** numeric(12,2) as the driver returns it: a decimal string. */
  price: string;
  currency: string;
  created_at: Date;
}

/** The product as version `version` represents it (SPEC §2). */
export function productRepresentation(row: ProductRow, version: 1 | 2) {
  const common = { id: row.id, sku: row.sku, name: row.name };
  return version === 1
    ? { ...common, price: Number(row.price), currency: row.currency, createdAt: row.created_at }
    : { ...common, price: { amount: row.price, currency: row.currency }, createdAt: row.created_at };
}

type ProductSortKey = 'id' | 'createdAt';
const LIST: ListSpec<ProductSortKey, Record<string, never>> = { sortKeys: ['id', 'createdAt'], filters: {} };
const SORT_COLUMNS: Record<ProductSortKey, string> = { id: 'id', createdAt: 'created_at' };

async function listProducts(ctx: RequestContext): Promise<Response> {
  const query = listQueryOf(ctx.url, LIST);
  const { rows, total } = await fetchPage<ProductRow>(ctx.services.db, 'ListProducts', 'CountProducts', { orderBy: orderBy(query.sort, SORT_COLUMNS) }, [], query);
  return collectionResponse(ctx.url, rows.map((row) => productRepresentation(row, ctx.version)), total, query);
}

async function getProduct(ctx: RequestContext): Promise<Response> {
  const row = await ctx.services.db.one<ProductRow>('GetProduct', [ctx.params.id as number]);
  if (row === undefined) throw new HttpError(404, 'not-found', { detail: `There is no product ${ctx.params.id}.` });
  return jsonResponse(productRepresentation(row, ctx.version));
}

export const productRoutes: readonly RouteSpec[] = [
  {
    method: 'GET', pattern: '/products', auth: 'public', cache: 'public', handler: listProducts,
    doc: {
      summary: 'List the product catalog',
      description: 'Every product, a page at a time, sorted by id or createdAt. Public: no token needed, and cacheable by shared caches (Cache-Control: public).',
      success: { status: 200, schema: { v1: 'ProductPageV1', v2: 'ProductPageV2' } }, list: LIST,
    },
  },
  {
    method: 'GET', pattern: '/products/{id:int}', auth: 'public', cache: 'public', handler: getProduct,
    doc: {
      summary: 'Get a product',
      description: 'One product of the catalog with its price (version 1: a number and a currency; version 2: an amount string and a currency). Public and cacheable by shared caches.',
      success: { status: 200, schema: { v1: 'ProductV1', v2: 'ProductV2' } },
    },
  },
];
