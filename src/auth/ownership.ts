/**
 * Ownership (contract §6), in one place: an admin sees everything; a
 * customer sees only their own orders and what belongs to them (items,
 * payments, events), and another customer's thing answers as a missing one.
 * Each rule is a value the statements take (the owner to limit to, or
 * `null`), or fixed SQL conditions of a list.
 */
import type { Condition } from '../db/page.ts';
import { invalidQuery } from '../http/list-query.ts';
import type { Principal } from './authenticator.ts';

/** The customer a principal is limited to, or `null` for an admin. */
export function ownerLimit(principal: Principal): number | null {
  return principal.role === 'admin' ? null : principal.userId;
}

/**
 * The conditions of a collection of things that belong to orders (items,
 * payments), contract §4: `orderId` is required from a customer, and a
 * customer sees only their own orders' things. `orderColumn` is the fixed
 * SQL column of the order id (`i.order_id`, `p.order_id`); the order is `o`.
 */
export function orderScopedConditions(
  principal: Principal,
  orderId: number | undefined,
  orderColumn: string,
): Condition[] {
  const owner = ownerLimit(principal);
  if (owner !== null && orderId === undefined)
    throw invalidQuery([{ parameter: 'orderId', detail: 'is required for customers' }]);
  const conditions: Condition[] = [];
  if (owner !== null) conditions.push({ sql: (p) => `o.customer_id = ${p}`, value: owner });
  if (orderId !== undefined) conditions.push({ sql: (p) => `${orderColumn} = ${p}`, value: orderId });
  return conditions;
}

/** The conditions of a list of users: a customer's holds only themselves. */
export function userConditions(principal: Principal): Condition[] {
  return principal.role === 'admin' ? [] : [{ sql: (p) => `id = ${p}`, value: principal.userId }];
}
