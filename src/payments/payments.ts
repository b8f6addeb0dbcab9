/**
 * Payments (SPEC §2, §4, §6, §7). `POST /payments` needs an Idempotency-Key;
 * the payment insert and the order's move to `paid` commit in one
 * transaction, with the stored idempotent result. Money is compared as
 * decimals in SQL, never as floats.
 */
import * as v from 'valibot';
import { principalOf, type RequestContext, type RouteSpec } from '../app.ts';
import { inTransaction, type Queryable } from '../db/database.ts';
import { collectionResponse, fetchPage, listQueryOf } from '../http/collection.ts';
import { checkJsonContentType, parseJson, validate, validationError } from '../http/json-body.ts';
import { jsonResponse } from '../http/json.ts';
import { orderBy, where, type ListSpec } from '../http/list-query.ts';
import { HttpError } from '../http/problem.ts';
import { ID_SCHEMA, positiveId } from '../orders/orders.ts';
import { orderScopedConditions, ownerLimit } from '../orders/store.ts';
import { orderRepresentation, type OrderRow } from '../orders/representation.ts';
import { recordEvent } from '../events/log.ts';

export interface PaymentRow {
  id: number;
  order_id: number;
  amount: string;
  currency: string;
  status: 'succeeded';
  created_at: Date;
}

/** The payment as `version` represents it (SPEC §2). */
export function paymentRepresentation(row: PaymentRow, version: 1 | 2) {
  const common = { id: row.id, orderId: row.order_id };
  return version === 1
    ? { ...common, amount: Number(row.amount), currency: row.currency, status: row.status, createdAt: row.created_at }
    : { ...common, amount: { amount: row.amount, currency: row.currency }, status: row.status, createdAt: row.created_at };
}

const orderId = v.pipe(v.number('must be an order id (a positive integer)'), v.safeInteger('must be an order id (a positive integer)'), v.minValue(1, 'must be an order id (a positive integer)'));
const currency = v.pipe(v.string('must be an ISO 4217 code such as EUR'), v.regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code such as EUR'));
const DECIMAL = /^[0-9]{1,10}(\.[0-9]{1,2})?$/;

/** v1: `{"orderId", "amount": number, "currency"}`. */
export const PaymentV1Schema = v.strictObject({
  orderId,
  amount: v.pipe(v.number('must be a number'), v.finite('must be a number'), v.minValue(0, 'must not be negative')),
  currency,
});
/** v2: `{"orderId", "amount": {"amount": "59.90", "currency": "EUR"}}`. */
export const PaymentV2Schema = v.strictObject({
  orderId,
  amount: v.strictObject({
    amount: v.pipe(v.string('must be a decimal string such as "59.90"'), v.regex(DECIMAL, 'must be a decimal string such as "59.90"')),
    currency,
  }),
});

interface PaymentInput {
  orderId: number;
  /** The amount as decimal text, for an exact comparison in SQL. */
  amount: string;
  currency: string;
  /** Where the amount and currency are in this version's body. */
  pointers: { amount: string; currency: string };
}

function input(ctx: RequestContext): PaymentInput {
  checkJsonContentType(ctx.request.headers.get('content-type'), { version: ctx.version });
  const document = parseJson(ctx.body);
  if (ctx.version === 1) {
    const body = validate(PaymentV1Schema, document);
    // A JSON number's shortest decimal form: 59.9 is "59.9"; 0.1 + 0.2 would be "0.30000000000000004" and never equal a total.
    return { orderId: body.orderId, amount: String(body.amount), currency: body.currency, pointers: { amount: '/amount', currency: '/currency' } };
  }
  const body = validate(PaymentV2Schema, document);
  return { orderId: body.orderId, amount: body.amount.amount, currency: body.amount.currency, pointers: { amount: '/amount/amount', currency: '/amount/currency' } };
}

async function create(ctx: RequestContext): Promise<Response> {
  const principal = principalOf(ctx);
  const payment = input(ctx);
  const { db } = ctx.services;
  const row = await inTransaction(db, ctx.tx, async (tx: Queryable) => {
    const order = await db.one<{ id: number; status: string; currency: string; total: string }>('LockOrderForPayment', [payment.orderId, ownerLimit(principal)], tx);
    // Another customer's order is as missing as an unknown one (SPEC §6).
    if (order === undefined) throw validationError([{ pointer: '/orderId', detail: `there is no order ${payment.orderId}` }]);
    if (order.status !== 'pending') {
      throw new HttpError(409, 'order-not-payable', { detail: `Order ${order.id} is ${order.status}; only a pending order can be paid.` });
    }
    const errors = [];
    if (payment.currency !== order.currency) errors.push({ pointer: payment.pointers.currency, detail: `must be the order's currency, ${order.currency}` });
    const equal = await db.one<{ equal: boolean }>('AmountEqualsTotal', [payment.amount, order.total], tx);
    if (!equal?.equal) errors.push({ pointer: payment.pointers.amount, detail: `must equal the order total, ${order.total}` });
    if (errors.length > 0) throw validationError(errors);
    const inserted = (await db.one<PaymentRow>('InsertPayment', [order.id, order.total, order.currency], tx)) as PaymentRow;
    await ctx.services.hooks?.afterPaymentInsert?.();
    await db.exec('MarkOrderPaid', [order.id], tx);
    const paid = (await db.one<OrderRow>('GetOrder', [order.id, null], tx)) as OrderRow;
    await recordEvent(db, tx, 'payment.succeeded', paid.customer_id, paymentRepresentation(inserted, 2));
    await recordEvent(db, tx, 'order.status_changed', paid.customer_id, { from: 'pending', to: 'paid', order: orderRepresentation(paid, 2) });
    return inserted;
  });
  return jsonResponse(paymentRepresentation(row, ctx.version), 201, { location: `${ctx.url.pathname}/${row.id}` });
}

async function getOne(ctx: RequestContext): Promise<Response> {
  const id = ctx.params.id as number;
  const row = await ctx.services.db.one<PaymentRow>('GetPayment', [id, ownerLimit(principalOf(ctx))]);
  if (row === undefined) throw new HttpError(404, 'not-found', { detail: `There is no payment ${id}.` });
  return jsonResponse(paymentRepresentation(row, ctx.version));
}

type PaymentSortKey = 'id' | 'createdAt';
const LIST: ListSpec<PaymentSortKey, { orderId: number }> = { sortKeys: ['id', 'createdAt'], filters: { orderId: positiveId } };
const SORT_COLUMNS: Record<PaymentSortKey, string> = { id: 'p.id', createdAt: 'p.created_at' };

async function list(ctx: RequestContext): Promise<Response> {
  const query = listQueryOf(ctx.url, LIST);
  const filter = where(orderScopedConditions(principalOf(ctx), query.filters.orderId, 'p.order_id'));
  const { rows, total } = await fetchPage<PaymentRow>(ctx.services.db, 'ListPayments', 'CountPayments', { where: filter.sql, orderBy: orderBy(query.sort, SORT_COLUMNS) }, filter.params, query);
  return collectionResponse(ctx.url, rows.map((row) => paymentRepresentation(row, ctx.version)), total, query);
}

export const paymentRoutes: readonly RouteSpec[] = [
  {
    method: 'POST', pattern: '/payments', auth: 'payments:write', idempotency: 'required', handler: create,
    doc: {
      summary: 'Pay a pending order',
      description: 'The amount must equal the order total and the currency match. The payment and the order\'s move to paid commit together.',
      success: { status: 201, schema: { v1: 'PaymentV1', v2: 'PaymentV2' } },
      body: { v1: 'NewPaymentV1', v2: 'NewPaymentV2' },
      problems: [[409, 'order-not-payable'], [422, 'validation']],
    },
  },
  {
    method: 'GET', pattern: '/payments', auth: 'payments:read', handler: list,
    doc: {
      summary: 'List payments', description: 'A customer must give orderId.',
      success: { status: 200, schema: { v1: 'PaymentPageV1', v2: 'PaymentPageV2' } },
      list: LIST, query: { orderId: { description: 'only the payments of this order (required for customers)', schema: ID_SCHEMA } },
    },
  },
  {
    method: 'GET', pattern: '/payments/{id:int}', auth: 'payments:read', handler: getOne,
    doc: {
      summary: 'Get a payment',
      description: 'A customer reads only the payments of their own orders: another customer\'s payment answers 404, as a missing one.',
      success: { status: 200, schema: { v1: 'PaymentV1', v2: 'PaymentV2' } },
    },
  },
];
