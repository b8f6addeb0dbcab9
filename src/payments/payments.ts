/**
 * Payments (contract §2, §4, §6, §7). `POST /payments` needs an Idempotency-Key;
 * the payment insert and the order's move to `paid` commit in one
 * transaction, with the stored idempotent result. Money is compared as
 * decimals in SQL, never as floats.
 */
import * as v from 'valibot';
import { principalOf, type RequestContext, type RouteSpec } from '../pipeline/context.ts';
import { collectionHandler } from '../pipeline/collection.ts';
import { where } from '../db/page.ts';
import { memberSource, validationError } from '../http/json-body.ts';
import { readJsonBody } from '../pipeline/body.ts';
import { jsonResponse } from '../http/json.ts';
import { positiveId, type ListSpec } from '../http/list-query.ts';
import { HttpError } from '../http/problem.ts';
import type { Version } from '../http/negotiation.ts';
import { Currency, ID_SCHEMA, Id, idOf, money, Money, MoneyNumber, named, page, Timestamp } from '../openapi/atoms.ts';
import { orderScopedConditions, ownerLimit } from '../auth/ownership.ts';
import { orderRepresentation, type OrderRow } from '../orders/representation.ts';
import { recordEvent } from '../events/outbox.ts';

export interface PaymentRow {
  id: number;
  order_id: number;
  amount: string;
  currency: string;
  status: 'succeeded';
  created_at: Date;
}

/** The payment as `version` represents it (contract §2). */
export function paymentRepresentation(row: PaymentRow, version: Version) {
  const common = { id: row.id, orderId: row.order_id };
  const { status, created_at: createdAt } = row;
  return version === 1
    ? { ...common, amount: money(row.amount, row.currency, version), currency: row.currency, status, createdAt }
    : { ...common, amount: money(row.amount, row.currency, version), status, createdAt };
}

const PaymentV1 = named(
  'PaymentV1',
  v.strictObject({
    id: Id,
    orderId: Id,
    amount: MoneyNumber,
    currency: Currency,
    status: v.literal('succeeded'),
    createdAt: Timestamp,
  }),
);
const PaymentV2 = named(
  'PaymentV2',
  v.strictObject({
    id: Id,
    orderId: Id,
    amount: Money,
    status: v.literal('succeeded'),
    createdAt: Timestamp,
  }),
);
const PAYMENT = { v1: PaymentV1, v2: PaymentV2 };
const PAYMENT_PAGE = { v1: page('PaymentPageV1', PaymentV1), v2: page('PaymentPageV2', PaymentV2) };

const orderId = idOf('order');
const currency = v.pipe(
  v.string('must be an ISO 4217 code such as EUR'),
  v.regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code such as EUR'),
);
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
    amount: v.pipe(
      v.string('must be a decimal string such as "59.90"'),
      v.regex(DECIMAL, 'must be a decimal string such as "59.90"'),
    ),
    currency,
  }),
});
/** The request bodies as the OpenAPI document names them. */
const NEW_PAYMENT = { v1: named('NewPaymentV1', PaymentV1Schema), v2: named('NewPaymentV2', PaymentV2Schema) };

interface PaymentInput {
  orderId: number;
  /** The amount as decimal text, for an exact comparison in SQL. */
  amount: string;
  currency: string;
  /** Where the amount and currency are in this version's body. */
  pointers: { amount: string; currency: string };
}

// A JSON number as written (RFC 8259 §6).
const JSON_NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?([0-9]+))?$/;

/**
 * Whether `amount` (decimal text) can be handed to PostgreSQL's numeric at
 * all: at most 1,000 characters and an exponent of at most four digits. Beyond, it
 * cannot equal a total of numeric(12,2) anyway, and numeric would refuse it
 * (`1e-999999`: value overflows numeric format) inside the payment's transaction.
 */
function comparable(amount: string): boolean {
  const match = amount.length <= 1_000 ? JSON_NUMBER.exec(amount) : null;
  return match !== null && (match[1] === undefined || match[1].length <= 4);
}

function input(ctx: RequestContext): PaymentInput {
  if (ctx.version === 1) {
    const body = readJsonBody(ctx, PaymentV1Schema);
    // contract §4: the decimal the client wrote, never its binary float (24.999999999999999
    // parses to 25, and must not pay a total of 25.00). The schema has seen a finite number there.
    return {
      orderId: body.orderId,
      amount: memberSource(ctx.body, 'amount') as string,
      currency: body.currency,
      pointers: { amount: '/amount', currency: '/currency' },
    };
  }
  const body = readJsonBody(ctx, PaymentV2Schema);
  return {
    orderId: body.orderId,
    amount: body.amount.amount,
    currency: body.amount.currency,
    pointers: { amount: '/amount/amount', currency: '/amount/currency' },
  };
}

async function create(ctx: RequestContext): Promise<Response> {
  const principal = principalOf(ctx);
  const payment = input(ctx);
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
    await ctx.services.hooks?.afterPaymentInsert?.();
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
