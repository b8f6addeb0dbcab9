/**
 * Writing orders: each operation is one transaction that locks the order
 * row first, so concurrent writers of one order are serialized and every
 * rule (§3 transitions, §4 editability, §6 ownership) is checked against the
 * state the write will change. Reads and writes run the statements of
 * `sql/queries/orders.sql`.
 */
import type { Principal } from '../auth/authenticator.ts';
import { inTransaction, type Database, type Queryable } from '../db/database.ts';
import { validationError } from '../http/json-body.ts';
import { invalidQuery } from '../http/collection.ts';
import type { Condition } from '../http/list-query.ts';
import { HttpError, type ProblemError } from '../http/problem.ts';
import { orderRepresentation, type OrderRow } from './representation.ts';
import { recordEvent } from '../events/log.ts';
import type { Item, Status } from './schema.ts';
import { checkTransition } from './transitions.ts';

/** PostgreSQL: numeric value out of range (a total past numeric(12,2)). */
const NUMERIC_OUT_OF_RANGE = '22003';

/** The customer a principal is limited to, or `null` for an admin (SPEC §6). */
export function ownerLimit(principal: Principal): number | null {
  return principal.role === 'admin' ? null : principal.userId;
}

/**
 * The conditions of a collection of things that belong to orders (items,
 * payments), SPEC §4 and §6: `orderId` is required from a customer, and a
 * customer sees only their own orders' things. `orderColumn` is the fixed
 * SQL column of the order id (`i.order_id`, `p.order_id`); the order is `o`.
 */
export function orderScopedConditions(principal: Principal, orderId: number | undefined, orderColumn: string): Condition[] {
  const owner = ownerLimit(principal);
  if (owner !== null && orderId === undefined) throw invalidQuery([{ parameter: 'orderId', detail: 'is required for customers' }]);
  const conditions: Condition[] = [];
  if (owner !== null) conditions.push({ sql: (p) => `o.customer_id = ${p}`, value: owner });
  if (orderId !== undefined) conditions.push({ sql: (p) => `${orderColumn} = ${p}`, value: orderId });
  return conditions;
}

export function notFound(id: number): HttpError {
  return new HttpError(404, 'not-found', { detail: `There is no order ${id}.` });
}

export async function getOrder(db: Database, id: number, principal: Principal, on?: Queryable): Promise<OrderRow> {
  const row = await db.one<OrderRow>('GetOrder', [id, ownerLimit(principal)], on);
  if (row === undefined) throw notFound(id);
  return row;
}

interface ProductPrice {
  id: number;
  price: string;
  currency: string;
}

/**
 * Checks that every item names a known product and that all share one
 * currency; returns that currency, or throws 422 with a pointer per item.
 */
async function currencyOf(db: Database, items: readonly Item[], on: Queryable): Promise<string> {
  const products = new Map(
    (await db.many<ProductPrice>('FindProducts', [items.map((i) => String(i.productId))], on)).map((p) => [p.id, p]),
  );
  const errors: ProblemError[] = [];
  let currency: string | undefined;
  items.forEach((item, index) => {
    const product = products.get(item.productId);
    if (product === undefined) {
      errors.push({ pointer: `/items/${index}/productId`, detail: `there is no product ${item.productId}` });
    } else if (currency === undefined) {
      currency = product.currency;
    } else if (product.currency !== currency) {
      errors.push({ pointer: `/items/${index}/productId`, detail: `is priced in ${product.currency}, the order's other items in ${currency}; an order has one currency` });
    }
  });
  if (errors.length > 0) throw validationError(errors);
  return currency as string;
}

async function requireUser(db: Database, userId: number, on: Queryable): Promise<void> {
  if ((await db.one('GetUser', [userId], on)) === undefined) {
    throw validationError([{ pointer: '/customerId', detail: `there is no user ${userId}` }]);
  }
}

/** Runs `write`, turning a total past numeric(12,2) into a 422 rather than a 500. */
async function guardTotal<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if ((error as { code?: unknown }).code === NUMERIC_OUT_OF_RANGE) {
      throw validationError([{ pointer: '/items', detail: 'make the order total exceed 9999999999.99' }]);
    }
    throw error;
  }
}

/** Creates a pending order for `customerId` with `items` priced from the catalog now. */
export async function createOrder(db: Database, customerId: number, items: readonly Item[], checkCustomer: boolean, on?: Queryable): Promise<OrderRow> {
  return inTransaction(db, on, async (tx) => {
    if (checkCustomer) await requireUser(db, customerId, tx);
    const currency = await currencyOf(db, items, tx);
    const created = await guardTotal(() =>
      db.one<{ id: number }>('InsertOrder', [customerId, currency, items.map((i) => String(i.productId)), items.map((i) => String(i.qty))], tx),
    );
    const row = (await db.one<OrderRow>('GetOrder', [created!.id, null], tx)) as OrderRow;
    await recordEvent(db, tx, 'order.created', row.customer_id, orderRepresentation(row, 2));
    return row;
  });
}

/**
 * A check of the locked order before a write (`If-Match`): throws to refuse.
 * It runs inside the write's transaction, after the row lock.
 */
export type Precondition = (current: OrderRow) => void;

export interface OrderChanges {
  readonly customerId?: number;
  readonly status?: Status;
  readonly items?: readonly Item[];
}

interface LockedOrder {
  id: number;
  customer_id: number;
  status: Status;
  currency: string;
}

/** Same products with the same quantities, in whatever order. */
function sameItems(current: OrderRow['items'], wanted: readonly Item[]): boolean {
  if (current.length !== wanted.length) return false;
  const qty = new Map(current.map((i) => [i.productId, i.qty]));
  return wanted.every((i) => qty.get(i.productId) === i.qty);
}

/**
 * Applies `changes` to order `id` as `principal` (PUT and PATCH): ownership,
 * the §3 transition, and editability are checked on the locked row. Setting
 * what the order already has changes nothing, not even `updatedAt`.
 */
export async function updateOrder(db: Database, id: number, principal: Principal, changes: OrderChanges, precondition?: Precondition): Promise<OrderRow> {
  return inTransaction(db, undefined, async (tx) => {
    const locked = await db.one<LockedOrder>('LockOrder', [id, ownerLimit(principal)], tx);
    if (locked === undefined) throw notFound(id);
    const current = (await db.one<OrderRow>('GetOrder', [id, null], tx)) as OrderRow;
    precondition?.(current);

    const customerId = changes.customerId ?? locked.customer_id;
    const customerChanged = customerId !== locked.customer_id;
    if (customerChanged) {
      if (principal.role !== 'admin') throw new HttpError(403, 'forbidden', { detail: 'Only an admin may change the customer of an order.' });
      await requireUser(db, customerId, tx);
    }

    const status = changes.status ?? locked.status;
    const transition = checkTransition(locked.status, status, principal.role);
    if (!transition.ok) {
      throw new HttpError(transition.problem === 'forbidden' ? 403 : 409, transition.problem, { detail: transition.detail });
    }

    const itemsChanged = changes.items !== undefined && !sameItems(current.items, changes.items);
    if (itemsChanged && locked.status !== 'pending') {
      throw new HttpError(409, 'order-not-editable', { detail: `The items of a ${locked.status} order cannot change; only a pending order's can.` });
    }

    if (!customerChanged && status === locked.status && !itemsChanged) return current;
    let currency = locked.currency;
    if (itemsChanged) {
      const items = changes.items as readonly Item[];
      currency = await currencyOf(db, items, tx);
      await db.one('ReplaceOrderItems', [id, items.map((i) => String(i.productId)), items.map((i) => String(i.qty))], tx);
    }
    await guardTotal(() => db.exec('UpdateOrder', [id, customerId, status, currency, itemsChanged], tx));
    const row = (await db.one<OrderRow>('GetOrder', [id, null], tx)) as OrderRow;
    const representation = orderRepresentation(row, 2);
    if (customerChanged || itemsChanged) await recordEvent(db, tx, 'order.updated', row.customer_id, representation);
    if (status !== locked.status) await recordEvent(db, tx, 'order.status_changed', row.customer_id, { from: locked.status, to: status, order: representation });
    return row;
  });
}

/** Deletes order `id` (and its items), as `principal`. */
export async function deleteOrder(db: Database, id: number, principal: Principal, precondition?: Precondition): Promise<void> {
  await inTransaction(db, undefined, async (tx) => {
    const locked = await db.one<LockedOrder>('LockOrder', [id, ownerLimit(principal)], tx);
    if (locked === undefined) throw notFound(id);
    const current = (await db.one<OrderRow>('GetOrder', [id, null], tx)) as OrderRow;
    precondition?.(current);
    if ((await db.one<{ has: boolean }>('OrderHasPayments', [id], tx))?.has) {
      throw new HttpError(409, 'order-has-payments', { detail: `Order ${id} has a payment and cannot be deleted; cancel it instead.` });
    }
    await recordEvent(db, tx, 'order.deleted', current.customer_id, orderRepresentation(current, 2));
    await db.exec('DeleteOrder', [id], tx);
  });
}
