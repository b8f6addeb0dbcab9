/**
 * The rules of orders, pure: the request bodies (contract §4), as valibot
 * schemas: strict (an unknown member is a 422, never ignored or stored), with
 * the messages the problem details carry; the rules that span several members
 * (no product twice); and the status transitions (contract §3) as a table,
 * and who may make them.
 */
import * as v from 'valibot';
import type { Role } from '../auth/authenticator.ts';
import { jsonPointer } from '../http/json-pointer.ts';
import type { ProblemError } from '../http/problem.ts';
import { idOf, named } from '../openapi/atoms.ts';

export const STATUSES = ['pending', 'paid', 'shipped', 'delivered', 'cancelled'] as const;
export type Status = (typeof STATUSES)[number];

export const MAX_ITEMS = 100;
export const MAX_QTY = 1000;

export const ItemSchema = v.strictObject({
  productId: idOf('product'),
  qty: v.pipe(
    v.number(`must be an integer from 1 to ${MAX_QTY}`),
    v.integer(`must be an integer from 1 to ${MAX_QTY}`),
    v.minValue(1, `must be an integer from 1 to ${MAX_QTY}`),
    v.maxValue(MAX_QTY, `must be an integer from 1 to ${MAX_QTY}`),
  ),
});
export type Item = v.InferOutput<typeof ItemSchema>;

const Items = v.pipe(
  v.array(ItemSchema, 'must be an array of items'),
  v.minLength(1, `must hold from 1 to ${MAX_ITEMS} items`),
  v.maxLength(MAX_ITEMS, `must hold from 1 to ${MAX_ITEMS} items`),
);
const Status = v.picklist(STATUSES, `must be one of ${STATUSES.join(', ')}`);

/** `POST /orders`. */
export const CreateOrderSchema = v.strictObject({
  customerId: v.optional(idOf('user')),
  items: Items,
});
export type CreateOrder = v.InferOutput<typeof CreateOrderSchema>;

/** `PUT /orders/{id}`: every writable member, all required. */
export const ReplaceOrderSchema = v.strictObject({
  customerId: idOf('user'),
  status: Status,
  items: Items,
});
export type ReplaceOrder = v.InferOutput<typeof ReplaceOrderSchema>;

/**
 * `PATCH /orders/{id}`: a JSON Merge Patch (RFC 7396). A member set to
 * `null` would delete it, and no member of an order can be deleted: 422.
 */
export const PatchOrderSchema = v.strictObject({
  customerId: v.optional(idOf('user')),
  status: v.optional(Status),
  items: v.optional(Items),
});
export type PatchOrder = v.InferOutput<typeof PatchOrderSchema>;

/** The request bodies as the OpenAPI document names them. */
export const CREATE_ORDER = named('CreateOrder', CreateOrderSchema);
export const REPLACE_ORDER = named('ReplaceOrder', ReplaceOrderSchema);
export const PATCH_ORDER = named('PatchOrder', PatchOrderSchema);

/** The members a merge patch sets to null, as errors (RFC 7396 would delete them). */
export function nullMembers(patch: unknown): ProblemError[] {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return [];
  return Object.entries(patch)
    .filter(([, value]) => value === null)
    .map(([key]) => ({
      pointer: jsonPointer([key]),
      detail: 'must not be null: no member of an order can be removed',
    }));
}

/** A product may appear once per order (contract §4). */
export function duplicateProducts(items: readonly Item[]): ProblemError[] {
  const first = new Map<number, number>();
  const errors: ProblemError[] = [];
  items.forEach((item, index) => {
    const seen = first.get(item.productId);
    if (seen === undefined) first.set(item.productId, index);
    else
      errors.push({
        pointer: `/items/${index}/productId`,
        detail: `names product ${item.productId} again (already at /items/${seen})`,
      });
  });
  return errors;
}

interface Transition {
  readonly to: Status;
  /** Who may set it through PUT or PATCH; `payments` only through POST /payments. */
  readonly by: 'customer' | 'admin' | 'payments';
}

const TRANSITIONS: Readonly<Record<Status, readonly Transition[]>> = {
  pending: [
    { to: 'paid', by: 'payments' },
    { to: 'cancelled', by: 'customer' },
  ],
  paid: [
    { to: 'shipped', by: 'admin' },
    { to: 'cancelled', by: 'admin' },
  ],
  shipped: [{ to: 'delivered', by: 'admin' }],
  delivered: [],
  cancelled: [],
};

export type TransitionCheck =
  | { readonly ok: true }
  /** 409 `invalid-transition`: nobody may make it this way. */
  | { readonly ok: false; readonly problem: 'invalid-transition'; readonly detail: string }
  /** 403 `forbidden`: an admin could, this role may not. */
  | { readonly ok: false; readonly problem: 'forbidden'; readonly detail: string };

/**
 * May `role` move an order from `from` to `to` through PUT or PATCH? The
 * same status is always allowed: an absolute write is repeat-safe.
 *
 * @example
 * checkTransition('pending', 'cancelled', 'customer') // { ok: true }
 * checkTransition('delivered', 'pending', 'admin').ok  // false
 */
export function checkTransition(from: Status, to: Status, role: Role): TransitionCheck {
  if (from === to) return { ok: true };
  const transition = TRANSITIONS[from].find((t) => t.to === to);
  if (transition === undefined) {
    const final = TRANSITIONS[from].length === 0 ? ` (${from} is final)` : '';
    return { ok: false, problem: 'invalid-transition', detail: `An order cannot go from ${from} to ${to}${final}.` };
  }
  if (transition.by === 'payments') {
    return {
      ok: false,
      problem: 'invalid-transition',
      detail: `An order goes from ${from} to ${to} only through a successful POST /payments.`,
    };
  }
  if (transition.by === 'admin' && role !== 'admin') {
    return { ok: false, problem: 'forbidden', detail: `Only an admin may move an order from ${from} to ${to}.` };
  }
  return { ok: true };
}
