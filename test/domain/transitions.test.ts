/**
 * Order status transitions (contract §3; src/orders/rules.ts) as the full
 * matrix: every (from, to) pair of statuses, for each role, with the exact
 * answer of checkTransition().
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Role } from '../../src/auth/authenticator.ts';
import { checkTransition, type TransitionCheck } from '../../src/orders/rules.ts';
import { STATUSES, type Status } from '../../src/orders/rules.ts';

const OK: TransitionCheck = { ok: true };
/** 409 `invalid-transition`. */
const invalid = (detail: string): TransitionCheck => ({ ok: false, problem: 'invalid-transition', detail });
/** 403 `forbidden`. */
const forbidden = (detail: string): TransitionCheck => ({ ok: false, problem: 'forbidden', detail });

const PAYMENTS_ONLY = invalid('An order goes from pending to paid only through a successful POST /payments.');

/** [from, to, as customer, as admin]. */
const MATRIX: readonly (readonly [Status, Status, TransitionCheck, TransitionCheck])[] = [
  ['pending', 'pending', OK, OK],
  ['pending', 'paid', PAYMENTS_ONLY, PAYMENTS_ONLY],
  [
    'pending',
    'shipped',
    invalid('An order cannot go from pending to shipped.'),
    invalid('An order cannot go from pending to shipped.'),
  ],
  [
    'pending',
    'delivered',
    invalid('An order cannot go from pending to delivered.'),
    invalid('An order cannot go from pending to delivered.'),
  ],
  ['pending', 'cancelled', OK, OK],

  [
    'paid',
    'pending',
    invalid('An order cannot go from paid to pending.'),
    invalid('An order cannot go from paid to pending.'),
  ],
  ['paid', 'paid', OK, OK],
  ['paid', 'shipped', forbidden('Only an admin may move an order from paid to shipped.'), OK],
  [
    'paid',
    'delivered',
    invalid('An order cannot go from paid to delivered.'),
    invalid('An order cannot go from paid to delivered.'),
  ],
  ['paid', 'cancelled', forbidden('Only an admin may move an order from paid to cancelled.'), OK],

  [
    'shipped',
    'pending',
    invalid('An order cannot go from shipped to pending.'),
    invalid('An order cannot go from shipped to pending.'),
  ],
  [
    'shipped',
    'paid',
    invalid('An order cannot go from shipped to paid.'),
    invalid('An order cannot go from shipped to paid.'),
  ],
  ['shipped', 'shipped', OK, OK],
  ['shipped', 'delivered', forbidden('Only an admin may move an order from shipped to delivered.'), OK],
  [
    'shipped',
    'cancelled',
    invalid('An order cannot go from shipped to cancelled.'),
    invalid('An order cannot go from shipped to cancelled.'),
  ],

  [
    'delivered',
    'pending',
    invalid('An order cannot go from delivered to pending (delivered is final).'),
    invalid('An order cannot go from delivered to pending (delivered is final).'),
  ],
  [
    'delivered',
    'paid',
    invalid('An order cannot go from delivered to paid (delivered is final).'),
    invalid('An order cannot go from delivered to paid (delivered is final).'),
  ],
  [
    'delivered',
    'shipped',
    invalid('An order cannot go from delivered to shipped (delivered is final).'),
    invalid('An order cannot go from delivered to shipped (delivered is final).'),
  ],
  ['delivered', 'delivered', OK, OK],
  [
    'delivered',
    'cancelled',
    invalid('An order cannot go from delivered to cancelled (delivered is final).'),
    invalid('An order cannot go from delivered to cancelled (delivered is final).'),
  ],

  [
    'cancelled',
    'pending',
    invalid('An order cannot go from cancelled to pending (cancelled is final).'),
    invalid('An order cannot go from cancelled to pending (cancelled is final).'),
  ],
  [
    'cancelled',
    'paid',
    invalid('An order cannot go from cancelled to paid (cancelled is final).'),
    invalid('An order cannot go from cancelled to paid (cancelled is final).'),
  ],
  [
    'cancelled',
    'shipped',
    invalid('An order cannot go from cancelled to shipped (cancelled is final).'),
    invalid('An order cannot go from cancelled to shipped (cancelled is final).'),
  ],
  [
    'cancelled',
    'delivered',
    invalid('An order cannot go from cancelled to delivered (cancelled is final).'),
    invalid('An order cannot go from cancelled to delivered (cancelled is final).'),
  ],
  ['cancelled', 'cancelled', OK, OK],
];

const ROLES: readonly Role[] = ['customer', 'admin'];

for (const [from, to, asCustomer, asAdmin] of MATRIX) {
  for (const [role, expected] of [
    ['customer', asCustomer],
    ['admin', asAdmin],
  ] as const) {
    const verdict = expected.ok ? 'allowed' : expected.problem;
    test(`${from} → ${to} as ${role}: ${verdict}`, () => {
      assert.deepStrictEqual(checkTransition(from, to, role), expected);
    });
  }
}

test('the matrix is complete: every (from, to) pair of STATUSES once, for both roles', () => {
  const pairs = MATRIX.map(([from, to]) => `${from}→${to}`);
  assert.deepStrictEqual(
    pairs,
    STATUSES.flatMap((from) => STATUSES.map((to) => `${from}→${to}`)),
  );
  assert.deepStrictEqual(ROLES.length * MATRIX.length, 50);
});
