/**
 * The order endpoints (contract §4) as routes, each with the prose of its
 * OpenAPI operation: the collection with its filters, one order, and its
 * creation, replacement, merge patch and deletion; with the ownership rules
 * of §6; and the items of orders as a flat collection (`/order-items`). The
 * handlers are in handlers.ts, the lists' rules and SQL in order-list.ts.
 */
import type { RouteSpec } from '../pipeline/context.ts';
import { ORDER, ORDER_ITEM_PAGE, ORDER_PAGE } from './representation.ts';
import { ID_SCHEMA, stringEnum } from '../openapi/atoms.ts';
import { CREATE_ORDER, PATCH_ORDER, REPLACE_ORDER, STATUSES } from './rules.ts';
import { ITEM_LIST, ORDER_LIST } from './order-list.ts';
import { create, currentTag, getOne, listAll, listItems, listOfUser, patch, remove, replace } from './handlers.ts';
import { createKeyed } from './keyed-create.ts';

const ORDER_QUERY = {
  status: { description: 'only orders with this status', schema: stringEnum(STATUSES) },
  customerId: { description: "only this customer's orders", schema: ID_SCHEMA },
  minTotal: {
    description: 'only orders whose total is at least this (up to 10 digits and 2 decimals)',
    schema: { type: 'string', maxLength: 13, pattern: '^[0-9]{1,10}(\\.[0-9]{1,2})?$' },
  },
};
const WRITE_PROBLEMS = [
  [409, 'invalid-transition'],
  [409, 'order-not-editable'],
  [412, 'precondition-failed'],
  [422, 'validation'],
] as const;

export const orderRoutes: readonly RouteSpec[] = [
  {
    method: 'GET',
    pattern: '/orders',
    auth: 'orders:read',
    cache: 'private',
    handler: listAll,
    doc: {
      summary: 'List orders',
      description: 'A customer sees only their own orders.',
      success: { status: 200, schema: ORDER_PAGE },
      list: ORDER_LIST,
      query: ORDER_QUERY,
    },
  },
  {
    method: 'POST',
    pattern: '/orders',
    auth: 'orders:write',
    handler: create,
    // Every refusal (the body, the customer, the products, the total) comes before CreateOrder writes anything.
    refusesBeforeWriting: true,
    // With a key, the order made in one statement that also claims the key and stores the answer.
    keyedInOneStatement: createKeyed,
    doc: {
      summary: 'Create a pending order',
      description:
        'Customers may omit customerId or give their own; admins must give one. Unit prices are captured from ' +
        'the catalog.',
      success: { status: 201, schema: ORDER },
      body: CREATE_ORDER,
      // The demo customer's id in a new embedded database: the example works with either demo token as it is.
      bodyExample: { customerId: 2, items: [{ productId: 1, qty: 2 }] },
      problems: [[422, 'validation']],
    },
  },
  {
    method: 'GET',
    pattern: '/orders/{id:int}',
    auth: 'orders:read',
    cache: 'private',
    handler: getOne,
    currentTag,
    doc: {
      summary: 'Get an order with its items',
      description:
        "A customer reads only their own orders: another customer's order answers 404, as a missing one. The " +
        "ETag comes from the order's revision, so If-None-Match is answered without building the order.",
      success: { status: 200, schema: ORDER },
    },
  },
  {
    method: 'PUT',
    pattern: '/orders/{id:int}',
    auth: 'orders:write',
    handler: replace,
    doc: {
      summary: 'Replace the writable members of an order',
      description:
        'customerId, status and items, all required. The status may change only as the order states allow (409 ' +
        'invalid-transition), items only while the order is pending (409 order-not-editable). With If-Match, the ' +
        'write happens only if the order is unchanged (else 412).',
      success: { status: 200, schema: ORDER },
      body: REPLACE_ORDER,
      ifMatch: true,
      problems: WRITE_PROBLEMS,
    },
  },
  {
    method: 'PATCH',
    pattern: '/orders/{id:int}',
    auth: 'orders:write',
    handler: patch,
    doc: {
      summary: 'Change an order (JSON Merge Patch)',
      description:
        'An RFC 7396 merge patch of status, items or customerId (admin only); null members are refused (422). ' +
        'The same rules as a replacement apply; setting the status the order already has succeeds and changes ' +
        'nothing.',
      success: { status: 200, schema: ORDER },
      body: PATCH_ORDER,
      ifMatch: true,
      problems: WRITE_PROBLEMS,
    },
  },
  {
    method: 'DELETE',
    pattern: '/orders/{id:int}',
    auth: 'orders:write',
    handler: remove,
    doc: {
      summary: 'Delete an order without payments',
      description:
        'An order that has a payment cannot be deleted (409 order-has-payments): cancel it instead. A repeated ' +
        'delete answers 404.',
      success: { status: 204 },
      ifMatch: true,
      problems: [
        [409, 'order-has-payments'],
        [412, 'precondition-failed'],
      ],
    },
  },
  {
    method: 'GET',
    pattern: '/users/{id:int}/orders',
    auth: 'orders:read',
    cache: 'private',
    handler: listOfUser,
    doc: {
      summary: "List one user's orders",
      description:
        'The orders of user id, with the same filters and sort keys as GET /orders. A customer may list only ' +
        'their own.',
      success: { status: 200, schema: ORDER_PAGE },
      list: ORDER_LIST,
      query: ORDER_QUERY,
    },
  },
];

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
      list: ITEM_LIST,
      query: { orderId: { description: 'only the items of this order (required for customers)', schema: ID_SCHEMA } },
    },
  },
];
