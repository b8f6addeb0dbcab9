/**
 * The statements of payments (`sql/queries/payments.sql`): a payment made in
 * one transaction with the order's move to `paid` and their events, its
 * amount compared with the order's total as decimals in SQL, never as floats;
 * and one payment as a principal may see it (contract §6).
 */
import type { Principal } from '../auth/authenticator.ts';
import { ownerLimit } from '../auth/ownership.ts';
import type { Db } from '../db/database.ts';
import { DomainError, invalidAt } from '../base/domain-error.ts';
import { orderRepresentation } from '../orders/representation.ts';
import { recordEvent } from '../outbox/outbox.ts';
import { comparable, type PaymentInput } from './rules.ts';
import { paymentRepresentation, type PaymentRow } from './representation.ts';

/**
 * Pays the order `payment` names, as `principal` may see it: 422 at `/orderId` for an order it may not see, 409
 * `order-not-payable` for one that is not pending, 422 for another currency or amount; else the payment, the
 * order now paid and their two events, in one transaction (`db`'s, when it has one).
 */
export async function recordPayment(db: Db, principal: Principal, payment: PaymentInput): Promise<PaymentRow> {
  return db.begin(async (db) => {
    const order = await db.opt('LockOrderForPayment', [payment.orderId, ownerLimit(principal)]);
    // Another customer's order is as missing as an unknown one (contract §6).
    if (order === undefined) throw invalidAt({ pointer: '/orderId', detail: `there is no order ${payment.orderId}` });
    if (order.status !== 'pending') {
      throw new DomainError(
        'order-not-payable',
        `Order ${order.id} is ${order.status}; only a pending order can be paid.`,
      );
    }
    const errors = [];
    if (payment.currency !== order.currency)
      errors.push({ pointer: payment.pointers.currency, detail: `must be the order's currency, ${order.currency}` });
    const equal = comparable(payment.amount)
      ? (await db.one('AmountEqualsTotal', [payment.amount, order.total])).equal
      : false;
    if (!equal) errors.push({ pointer: payment.pointers.amount, detail: `must equal the order total, ${order.total}` });
    if (errors.length > 0) throw new DomainError('validation', errors);
    const inserted = await db.one('InsertPayment', [order.id, order.total, order.currency]);
    await db.exec('MarkOrderPaid', [order.id]);
    const paid = await db.one('GetOrder', [order.id, null]);
    await recordEvent(db, 'payment.succeeded', paid.customer_id, paymentRepresentation(inserted, 2));
    await recordEvent(db, 'order.status_changed', paid.customer_id, {
      from: 'pending',
      to: 'paid',
      order: orderRepresentation(paid, 2),
    });
    return inserted;
  });
}

/** Payment `id` as `principal` may see it; 404 for another customer's, as for a missing one. */
export async function getPayment(db: Db, id: number, principal: Principal): Promise<PaymentRow> {
  const row = await db.opt('GetPayment', [id, ownerLimit(principal)]);
  if (row === undefined) throw new DomainError('not-found', `There is no payment ${id}.`);
  return row;
}
