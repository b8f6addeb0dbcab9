/** The product endpoints (contract §4) as routes, each with the prose of its OpenAPI operation. */
import type { RouteSpec } from '../pipeline/context.ts';
import { PRODUCT, PRODUCT_PAGE } from './representation.ts';
import { getProduct, listProducts, PRODUCT_LIST } from './handlers.ts';

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
      list: PRODUCT_LIST,
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
