/** The product handlers (contract §2, §4): the catalog is public and read-only over HTTP. */
import type { RequestContext } from '../pipeline/context.ts';
import { collectionHandler } from '../pipeline/collection.ts';
import { jsonResponse } from '../http/json.ts';
import type { ListSpec } from '../http/list-query.ts';
import { HttpError } from '../http/problem.ts';
import { productRepresentation } from './representation.ts';

type ProductSortKey = 'id' | 'createdAt';
export const PRODUCT_LIST: ListSpec<ProductSortKey, Record<string, never>> = {
  sortKeys: ['id', 'createdAt'],
  keyTypes: { id: 'bigint', createdAt: 'timestamptz' },
  filters: {},
};
const SORT_COLUMNS: Record<ProductSortKey, string> = { id: 'id', createdAt: 'created_at' };

export const listProducts = collectionHandler({
  list: PRODUCT_LIST,
  sql: () => ({ list: 'ListProducts', count: 'CountProducts', columns: SORT_COLUMNS }),
  represent: productRepresentation,
});

export async function getProduct(ctx: RequestContext): Promise<Response> {
  const row = await ctx.db.opt('GetProduct', [ctx.params.id as number]);
  if (row === undefined) throw new HttpError(404, 'not-found', { detail: `There is no product ${ctx.params.id}.` });
  return jsonResponse(productRepresentation(row, ctx.version));
}
