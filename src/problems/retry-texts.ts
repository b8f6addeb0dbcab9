/** Retries: the `Idempotency-Key` that makes a write safe to repeat, and the failures of the service itself. */
import type { ProblemTexts } from './problem-text.ts';

export const RETRY_TEXTS = {
  'idempotency-key-missing': {
    statuses: [400],
    meaning: 'This request must carry an `Idempotency-Key` header, so that a retry can never pay twice.',
    when: ['`POST /payments` (any version) without an `Idempotency-Key` header.'],
    whatToDo: [
      'Make one new key for each payment you mean to make (a UUID is a good choice) and send it as `Idempotency-Key`.',
      'Send the same key again whenever you retry that payment, after a time-out, a dropped connection or a 5xx: ' +
        'the first result is then replayed instead of running twice.',
    ],
  },
  'idempotency-key-in-use': {
    statuses: [409],
    meaning: 'Another request with the same `Idempotency-Key` (from the same user) is still being executed.',
    when: [
      'A request repeats a key while the first request with that key has not finished. The answer carries ' +
        '`Retry-After: 1`.',
    ],
    whatToDo: [
      'Wait the seconds of `Retry-After`, then send the same request with the same key: once the first request ' +
        'has finished, its result is replayed to you (with `Idempotent-Replayed: true`).',
      "This answer is not stored: it never replaces the first request's result.",
    ],
  },
  'idempotency-key-mismatch': {
    statuses: [422],
    meaning: 'This `Idempotency-Key` was already used, by you, for a different request.',
    when: [
      'Within 24 hours of its first use, a key is sent with another method, another path (the version included: ' +
        '`/v1/payments` and `/v2/payments` differ) or another body. Bodies are compared after parsing with sorted ' +
        'keys, so spacing and member order do not matter, values do.',
    ],
    whatToDo: [
      'A new operation needs a new key. A retry must repeat the first request exactly (method, path and body) ' +
        'with the same key; it then gets the first result again.',
    ],
  },
  internal: {
    statuses: [500],
    meaning: 'The service failed to handle the request because of a bug; the answer holds no details on purpose.',
    when: ["An error the service did not expect. The log has the details under the answer's `requestId`."],
    whatToDo: [
      "Report the `requestId` (also in `X-Request-Id`) and the time to the service's operators.",
      'Retrying may fail the same way. A write retried with the same `Idempotency-Key` runs anew: 5xx answers ' +
        'are not stored.',
    ],
  },
  unavailable: {
    statuses: [503],
    meaning:
      'The service cannot take the request right now: its database cannot be reached, it is at capacity, or it ' +
      'is reading as many request bodies as it holds at once. It recovers by itself.',
    when: [
      'The database refuses or drops connections, is restarting or failing over, has no free connections, or ' +
        'does not answer within 5 seconds. The answer carries `Retry-After`.',
      'The request bodies being read or handled at once fill `BODY_BUDGET_BYTES` (contract §11): the request ' +
        'was refused before any of its body was read, nothing was done, and the connection is closed ' +
        '(`Retry-After: 1`).',
      'More requests arrive than the service can serve (contract §14): the request was refused at once, before any ' +
        'of its work was done, because the process was saturated and this client had sent at least its share of ' +
        'the requests, or every turn for the database work was taken ("The service is at capacity"; ' +
        '`Retry-After: 1`).',
      '`GET /readyz` answers it while the database does not answer.',
    ],
    whatToDo: [
      'Retry after the seconds of `Retry-After`, waiting longer after each failure.',
      'Send writes with an `Idempotency-Key` and retry with the same key: a write that did commit before the ' +
        'answer was lost is then replayed instead of made twice.',
    ],
  },
  'outcome-unknown': {
    statuses: [503],
    meaning:
      'The request was sent to the database and no answer came back: the database was lost (a failover, a ' +
      'crash, a network fault) while the request was being committed, so it may or may not have been done.',
    when: [
      "The connection to the database was lost, or the 5 s deadline passed, after the request's transaction was " +
        'sent to be committed (or a write outside a transaction was sent) and before the database answered. The ' +
        'answer carries `Retry-After`.',
      'Every other 503 (`unavailable`) means the request was not done: its statements were never sent, or were ' +
        'cancelled and rolled back.',
    ],
    whatToDo: [
      'Retry with the same `Idempotency-Key`: if the first attempt was done, its stored answer is replayed ' +
        '(`Idempotent-Replayed: true`); if not, the request runs now, once.',
      'Without a key, look the resource up (the order list, the payment of the order) before sending the request ' +
        'again, or it may be done twice.',
    ],
  },
} satisfies ProblemTexts;
