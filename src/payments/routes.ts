/**
 * The payment endpoints (contract §4) as routes, each with the prose of its
 * OpenAPI operation; the handlers are in handlers.ts.
 */
import type { RouteSpec } from '../pipeline/context.ts';
import { ID_SCHEMA } from '../openapi/atoms.ts';
import { NEW_PAYMENT } from './rules.ts';
import { PAYMENT, PAYMENT_PAGE } from './representation.ts';
import { create, getOne, list, PAYMENT_LIST } from './handlers.ts';

export const paymentRoutes: readonly RouteSpec[] = [
  {
    method: 'POST',
    pattern: '/payments',
    auth: 'payments:write',
    idempotency: 'required',
    handler: create,
    doc: {
      summary: 'Pay a pending order',
      description:
        "The amount must equal the order total and the currency match. The payment and the order's move to paid " +
        'commit together.',
      success: { status: 201, schema: PAYMENT },
      body: NEW_PAYMENT,
      problems: [
        [409, 'order-not-payable'],
        [422, 'validation'],
      ],
    },
  },
  {
    method: 'GET',
    pattern: '/payments',
    auth: 'payments:read',
    handler: list,
    doc: {
      summary: 'List payments',
      description: 'A customer must give orderId.',
      success: { status: 200, schema: PAYMENT_PAGE },
      list: PAYMENT_LIST,
      query: {
        orderId: { description: 'only the payments of this order (required for customers)', schema: ID_SCHEMA },
      },
    },
  },
  {
    method: 'GET',
    pattern: '/payments/{id:int}',
    auth: 'payments:read',
    handler: getOne,
    doc: {
      summary: 'Get a payment',
      description:
        "A customer reads only the payments of their own orders: another customer's payment answers 404, as a " +
        'missing one.',
      success: { status: 200, schema: PAYMENT },
    },
  },
];
