/**
 * The request bodies of orders (contract §4), as valibot schemas: strict (an
 * unknown member is a 422, never ignored or stored), with the messages the
 * problem details carry. The rules that span several members (no product
 * twice) are checked in `checkItems()`.
 */
import * as v from 'valibot';
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
