/**
 * The payment as versions 1 and 2 represent it (contract §2), and its
 * schemas in the OpenAPI document. Money arrives from SQL as a decimal string.
 */
import * as v from 'valibot';
import type { RowOf } from '../db/database.ts';
import type { Version } from '../http/negotiation.ts';
import { Currency, Id, money, Money, MoneyNumber, named, page, Timestamp } from '../openapi/atoms.ts';

/** A payment as its statements give it. */
export type PaymentRow = RowOf<'GetPayment'>;

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
/** The schemas of `paymentRepresentation()`, alone and as a page, per version. */
export const PAYMENT = { v1: PaymentV1, v2: PaymentV2 };
export const PAYMENT_PAGE = { v1: page('PaymentPageV1', PaymentV1), v2: page('PaymentPageV2', PaymentV2) };
