/**
 * The body of `POST /payments` (contract §4), per version, and what the
 * handler reads of it: the order, and the amount as the decimal text the
 * client wrote, for an exact comparison in SQL.
 */
import * as v from 'valibot';
import type { RequestContext } from '../pipeline/context.ts';
import { memberSource } from '../http/json-scan.ts';
import { readJsonBody } from '../pipeline/body.ts';
import { documented, idOf, named } from '../openapi/atoms.ts';

const orderId = idOf('order');
const currency = v.pipe(
  v.string('must be an ISO 4217 code such as EUR'),
  v.regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code such as EUR'),
  documented<string>({ maxLength: 3 }),
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
      // The longest DECIMAL: 10 digits, a point and 2 decimals.
      documented<string>({ maxLength: 13 }),
    ),
    currency,
  }),
});
/** The request bodies as the OpenAPI document names them. */
export const NEW_PAYMENT = { v1: named('NewPaymentV1', PaymentV1Schema), v2: named('NewPaymentV2', PaymentV2Schema) };

export interface PaymentInput {
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
export function comparable(amount: string): boolean {
  const match = amount.length <= 1_000 ? JSON_NUMBER.exec(amount) : null;
  return match !== null && (match[1] === undefined || match[1].length <= 4);
}

/** The payment `ctx`'s body asks for, read with the schema of its version. */
export function paymentInput(ctx: RequestContext): PaymentInput {
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
