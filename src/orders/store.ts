/**
 * The statements of orders (`sql/queries/orders.sql`). Reading: one order as
 * a principal may see it (§6: another's is as missing as an unknown one, 404),
 * as a row, as the JSON text the database builds, or only its revision.
 * Writing: each operation is one transaction that locks the order row first,
 * so concurrent writers of one order are serialized and every rule (§3
 * transitions, §4 editability, §6 ownership) is checked against the state the
 * write will change.
 */
import type { Principal } from '../auth/authenticator.ts';
import type { BatchedRead, Db } from '../db/database.ts';
import { ownerLimit } from '../auth/ownership.ts';
import { DomainError, invalidAt } from '../base/domain-error.ts';
import type { Version } from '../http/negotiation.ts';
import { type ItemJson, itemsOf, orderRepresentation, type OrderRow } from './representation.ts';
import { recordEvent } from '../outbox/outbox.ts';
import { checkTransition, type Item, type Status } from './rules.ts';
import { currencyOf, currencyOfItems } from './item-currency.ts';

export function notFound(id: number): DomainError {
  return new DomainError('not-found', `There is no order ${id}.`);
}

/** An order as stored: the row of its representation, and its revision (contract §9). */
export interface StoredOrder extends OrderRow {
  /** Grows with every change to the order or its items (sql/migrations/0008_order_revision.sql). */
  revision: number;
}

export async function getOrder(db: Db, id: number, principal: Principal): Promise<StoredOrder> {
  const row = await db.opt('GetOrder', [id, ownerLimit(principal)]);
  if (row === undefined) throw notFound(id);
  return row;
}

/**
 * Order `id` as `principal` may see it, as API `version`'s JSON text (built by the database) with its revision; 404
 * like `getOrder`.
 */
export function getOrderJson(
  db: Db,
  id: number,
  principal: Principal,
  version: Version,
): Promise<{ revision: number; body: string }> {
  // One read per version: a CASE on the version would set up both versions' subqueries on every run. Not an async
  // function: the GET's hot path, a callback while it waits rather than a suspended frame.
  return db.batched(version === 1 ? ORDER_JSON : ORDER_JSON_V2, [id, ownerLimit(principal)]).then((row) => {
    if (row === undefined) throw notFound(id);
    return row;
  });
}

/** The revision of order `id` as `principal` may see it (one primary-key lookup); 404 like `getOrder`. */
export async function getOrderRevision(db: Db, id: number, principal: Principal): Promise<number> {
  const row = await db.batched(ORDER_REVISION, [id, ownerLimit(principal)]);
  if (row === undefined) throw notFound(id);
  return row.revision;
}

/**
 * The reads of one order, each gathered with the same read of other requests in one turn (src/db/batch.ts). The
 * JSON's batches of 16 or more go out in halves, two backends building them (docs/record/performance.md: GET 1.10 x).
 */
const ORDER_JSON: BatchedRead<'GetOrderJson'> = { single: 'GetOrderJson', batch: 'GetOrderJsonBatch', halvesFrom: 16 };
const ORDER_JSON_V2: BatchedRead<'GetOrderJsonV2'> = {
  single: 'GetOrderJsonV2',
  batch: 'GetOrderJsonV2Batch',
  halvesFrom: 16,
};
const ORDER_REVISION: BatchedRead<'GetOrderRevision'> = { single: 'GetOrderRevision', batch: 'GetOrderRevisionBatch' };

/** PostgreSQL: numeric value out of range (a total past numeric(12,2)). */
const NUMERIC_OUT_OF_RANGE = '22003';

function unknownUser(userId: number): DomainError {
  return invalidAt({ pointer: '/customerId', detail: `there is no user ${userId}` });
}

const totalTooLarge = (): DomainError =>
  invalidAt({ pointer: '/items', detail: 'make the order total exceed 9999999999.99' });

async function requireUser(db: Db, userId: number): Promise<void> {
  if ((await db.opt('GetUser', [userId])) === undefined) throw unknownUser(userId);
}

/** Runs `write`, turning a total past numeric(12,2) into a 422 rather than a 500. */
async function guardTotal<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if ((error as { code?: unknown }).code === NUMERIC_OUT_OF_RANGE) {
      throw totalTooLarge();
    }
    throw error;
  }
}

/**
 * Creates a pending order for `customerId` with `items` priced from the
 * catalog now, and its order.created event: two statements. The first
 * checks the rules and writes the order with its items only if they hold; a
 * refusal writes nothing and fails no statement, so an idempotent request's
 * transaction stays usable to store it. The errors are the ones the rules
 * have always given, in the same order: the customer, then each item, then
 * the total. The second reads the order back after its triggers and writes
 * the event from it.
 */
export async function createOrder(
  db: Db,
  customerId: number,
  items: readonly Item[],
  checkCustomer: boolean,
): Promise<StoredOrder> {
  return db.begin(async (db) => {
    const created = await db.one('CreateOrder', [
      customerId,
      checkCustomer,
      items.map((i) => String(i.productId)),
      items.map((i) => String(i.qty)),
    ]);
    if (created.id === null) {
      if (!created.customer_known) throw unknownUser(customerId);
      // A JSON array of each item's currency, NULL for an unknown product (see CreateOrder).
      currencyOfItems(items, created.currencies as (string | null)[]);
      throw totalTooLarge();
    }
    return await db.one('RecordOrderCreated', [created.id]);
  });
}

/**
 * A check of the locked order before a write (`If-Match`): throws to refuse.
 * It runs inside the write's transaction, after the row lock, on the
 * revision no other writer can change before this one commits.
 */
export type Precondition = (current: { readonly id: number; readonly revision: number }) => void;

export interface OrderChanges {
  readonly customerId?: number;
  readonly status?: Status;
  readonly items?: readonly Item[];
}

/** Same products with the same quantities, in whatever order. */
function sameItems(current: readonly ItemJson[], wanted: readonly Item[]): boolean {
  if (current.length !== wanted.length) return false;
  const qty = new Map(current.map((i) => [i.productId, i.qty]));
  return wanted.every((i) => qty.get(i.productId) === i.qty);
}

/**
 * Applies `changes` to order `id` as `principal` (PUT and PATCH): ownership,
 * the §3 transition, and editability are checked on the locked row. Setting
 * what the order already has changes nothing, not even `updatedAt`.
 */
export async function updateOrder(
  db: Db,
  id: number,
  principal: Principal,
  changes: OrderChanges,
  precondition?: Precondition,
): Promise<StoredOrder> {
  return db.begin(async (db) => {
    const locked = await db.opt('LockOrder', [id, ownerLimit(principal)]);
    if (locked === undefined) throw notFound(id);
    precondition?.(locked);
    const current = await db.one('GetOrder', [id, null]);

    const customerId = changes.customerId ?? locked.customer_id;
    const customerChanged = customerId !== locked.customer_id;
    if (customerChanged) {
      if (principal.role !== 'admin')
        throw new DomainError('forbidden', 'Only an admin may change the customer of an order.');
      await requireUser(db, customerId);
    }

    const status = changes.status ?? locked.status;
    const transition = checkTransition(locked.status, status, principal.role);
    if (!transition.ok) {
      throw new DomainError(transition.problem, transition.detail);
    }

    const itemsChanged = changes.items !== undefined && !sameItems(itemsOf(current), changes.items);
    if (itemsChanged && locked.status !== 'pending') {
      throw new DomainError(
        'order-not-editable',
        `The items of a ${locked.status} order cannot change; only a pending order's can.`,
      );
    }

    if (!customerChanged && status === locked.status && !itemsChanged) return current;
    let currency = locked.currency;
    if (itemsChanged) {
      const items = changes.items as readonly Item[];
      currency = await currencyOf(db, items);
      await db.one('ReplaceOrderItems', [id, items.map((i) => String(i.productId)), items.map((i) => String(i.qty))]);
    }
    await guardTotal(() => db.exec('UpdateOrder', [id, customerId, status, currency, itemsChanged]));
    // The triggers of 0008 have moved the revision: the response's tag is the new state's.
    const row = await db.one('GetOrder', [id, null]);
    const representation = orderRepresentation(row, 2);
    if (customerChanged || itemsChanged) await recordEvent(db, 'order.updated', row.customer_id, representation);
    if (status !== locked.status)
      await recordEvent(db, 'order.status_changed', row.customer_id, {
        from: locked.status,
        to: status,
        order: representation,
      });
    return row;
  });
}

/** Deletes order `id` (and its items), as `principal`. */
export async function deleteOrder(
  db: Db,
  id: number,
  principal: Principal,
  precondition?: Precondition,
): Promise<void> {
  await db.begin(async (db) => {
    const locked = await db.opt('LockOrder', [id, ownerLimit(principal)]);
    if (locked === undefined) throw notFound(id);
    precondition?.(locked);
    const current = await db.one('GetOrder', [id, null]);
    if ((await db.one('OrderHasPayments', [id])).has) {
      throw new DomainError(
        'order-has-payments',
        `Order ${id} has a payment and cannot be deleted; cancel it instead.`,
      );
    }
    await recordEvent(db, 'order.deleted', current.customer_id, orderRepresentation(current, 2));
    await db.exec('DeleteOrder', [id]);
  });
}
