/**
 * Order status transitions (contract §3) as a table, and who may make them.
 * Pure: no I/O.
 */
import type { Role } from '../auth/authenticator.ts';
import type { Status } from './schema.ts';

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
