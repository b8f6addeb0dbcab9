/**
 * Payments (contract §2, §4, §6, §7). `POST /payments` needs an Idempotency-Key;
 * the payment insert and the order's move to `paid` commit in one
 * transaction, with the stored idempotent result. Money is compared as
 * decimals in SQL, never as floats.
 */
import { principalOf, type RequestContext, type RouteSpec } from '../pipeline/context.ts';
import { collectionHandler } from '../pipeline/collection.ts';
import { where } from '../db/page.ts';
import { validationError } from '../http/json-body.ts';
import { jsonResponse } from '../http/json.ts';
import { positiveId, type ListSpec } from '../http/list-query.ts';
import { HttpError } from '../http/problem.ts';
import { ID_SCHEMA } from '../openapi/atoms.ts';
import { orderScopedConditions, ownerLimit } from '../auth/ownership.ts';
import { orderRepresentation, type OrderRow } from '../orders/representation.ts';
import { recordEvent } from '../events/outbox.ts';
import { comparable, NEW_PAYMENT, paymentInput } from './input.ts';
import { PAYMENT, PAYMENT_PAGE, paymentRepresentation, type PaymentRow } from './representation.ts';

async function create(ctx: RequestContext): Promise<Response> {
  const principal = principalOf(ctx);
  const payment = paymentInput(ctx);
  const { db } = ctx;
  const row = await db.begin(async (db) => {
    const order = await db.one<{ id: number; status: string; currency: string; total: string }>('LockOrderForPayment', [
      payment.orderId,
      ownerLimit(principal),
    ]);
    // Another customer's order is as missing as an unknown one (contract §6).
    if (order === undefined)
      throw validationError([{ pointer: '/orderId', detail: `there is no order ${payment.orderId}` }]);
    if (order.status !== 'pending') {
      throw new HttpError(409, 'order-not-payable', {
        detail: `Order ${order.id} is ${order.status}; only a pending order can be paid.`,
      });
    }
    const errors = [];
    if (payment.currency !== order.currency)
      errors.push({ pointer: payment.pointers.currency, detail: `must be the order's currency, ${order.currency}` });
    const equal = comparable(payment.amount)
      ? (await db.one<{ equal: boolean }>('AmountEqualsTotal', [payment.amount, order.total]))?.equal
      : false;
    if (!equal) errors.push({ pointer: payment.pointers.amount, detail: `must equal the order total, ${order.total}` });
    if (errors.length > 0) throw validationError(errors);
    const inserted = (await db.one<PaymentRow>('InsertPayment', [order.id, order.total, order.currency])) as PaymentRow;
    await db.exec('MarkOrderPaid', [order.id]);
    const paid = (await db.one<OrderRow>('GetOrder', [order.id, null])) as OrderRow;
    await recordEvent(db, 'payment.succeeded', paid.customer_id, paymentRepresentation(inserted, 2));
    await recordEvent(db, 'order.status_changed', paid.customer_id, {
      from: 'pending',
      to: 'paid',
      order: orderRepresentation(paid, 2),
    });
    return inserted;
  });
  return jsonResponse(paymentRepresentation(row, ctx.version), 201, { location: `${ctx.url.pathname}/${row.id}` });
}

async function getOne(ctx: RequestContext): Promise<Response> {
  const id = ctx.params.id as number;
  const row = await ctx.db.one<PaymentRow>('GetPayment', [id, ownerLimit(principalOf(ctx))]);
  if (row === undefined) throw new HttpError(404, 'not-found', { detail: `There is no payment ${id}.` });
  return jsonResponse(paymentRepresentation(row, ctx.version));
}

type PaymentSortKey = 'id' | 'createdAt';
const LIST: ListSpec<PaymentSortKey, { orderId: number }> = {
  sortKeys: ['id', 'createdAt'],
  keyTypes: { id: 'bigint', createdAt: 'timestamptz' },
  filters: { orderId: positiveId },
};
const SORT_COLUMNS: Record<PaymentSortKey, string> = { id: 'p.id', createdAt: 'p.created_at' };

const list = collectionHandler({
  list: LIST,
  sql: (ctx, query) => {
    const filter = where(orderScopedConditions(principalOf(ctx), query.filters.orderId, 'p.order_id'));
    return {
      list: 'ListPayments',
      count: 'CountPayments',
      where: filter.sql,
      params: filter.params,
      columns: SORT_COLUMNS,
    };
  },
  represent: paymentRepresentation,
});

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
      list: LIST,
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
