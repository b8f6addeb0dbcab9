/** Orders and payments: the order's state machine, its items, its payment and concurrent writes to it. */
import { STORED_UNDER_KEY, type ProblemTexts } from './problem-text.ts';

export const ORDER_TEXTS = {
  'invalid-transition': {
    statuses: [409],
    meaning: 'The order cannot move from its current status to the one asked for (contract §3); `detail` names both.',
    when: [
      'A `PUT` or `PATCH` sets a status the state machine does not reach from the current one: `pending` → ' +
        '`paid` or `cancelled`; `paid` → `shipped` or `cancelled`; `shipped` → `delivered`. `delivered` and ' +
        '`cancelled` are final.',
      'A `PUT` or `PATCH` sets `paid`: an order becomes paid only through a successful `POST /payments`.',
    ],
    whatToDo: [
      'Read the order (`GET /orders/{id}`) for its current status, and ask only for a transition the state ' +
        'machine allows from it.',
      'To pay an order, `POST /payments`. Setting the status the order already has always succeeds and changes ' +
        'nothing.',
    ],
  },
  'order-not-editable': {
    statuses: [409],
    meaning: "The order's items can no longer change: only a `pending` order's can.",
    when: [
      "A `PUT` or `PATCH` gives items that differ from the order's while the order is `paid`, `shipped`, " +
        '`delivered` or `cancelled`.',
    ],
    whatToDo: ['Leave the items out (or give them unchanged), or create a new order for the new items.'],
  },
  'order-has-payments': {
    statuses: [409],
    meaning: 'An order with a payment is a record of that payment and cannot be deleted.',
    when: ['`DELETE /orders/{id}` on an order that has a payment.'],
    whatToDo: ["Cancel the order instead: `PATCH` its `status` to `cancelled` (an admin's token for a `paid` order)."],
  },
  'order-not-payable': {
    statuses: [409],
    meaning: 'Only a `pending` order can be paid, and this one is not pending.',
    when: ['`POST /payments` for an order that is already `paid`, or `shipped`, `delivered` or `cancelled`.'],
    whatToDo: [
      'Read the order: if it is `paid`, it has been paid already (`GET /payments?orderId=<id>` shows the ' +
        'payment); do not pay again.',
      STORED_UNDER_KEY,
    ],
  },
  'precondition-failed': {
    statuses: [412],
    meaning:
      'The order has changed since you read it: its current entity tag is not in your `If-Match`, so nothing was ' +
      'written.',
    when: [
      "`PUT`, `PATCH` or `DELETE /orders/{id}` with an `If-Match` that does not match the order's current " +
        '`ETag` (strong comparison: a weak tag `W/"…"` never matches).',
      "A tag of another version or media type than the request's: tags differ between `/v1` and `/v2`, and " +
        'between `application/json` and the vendor types.',
      'Two clients wrote with the same tag: the first wrote, the second gets this.',
    ],
    whatToDo: [
      'Read the order again (same version and media type), apply your change to what it holds now, and send it ' +
        'with the new `ETag` in `If-Match`.',
      'Do not retry with the old tag: it will never match again.',
    ],
  },
} satisfies ProblemTexts;
