/**
 * What each problem type of contract §5 means, when the service answers with it
 * and what the client should do: the one source of the pages at
 * `GET /problems/<slug>` (HTML, Markdown and JSON are all rendered from it,
 * src/pages/problems.ts). The titles are those of the problem bodies
 * (`PROBLEM_TITLES`). Written from contract §3–§11 and from the code that raises
 * each slug (`new HttpError(status, 'slug'`); test/problem-pages.test.ts
 * fails when a slug the code can emit has no text here, or is raised with a
 * status its text does not list.
 *
 * Strings are plain text in which `…` marks a code span, as in Markdown.
 */
import type { ProblemSlug } from '../http/problem.ts';

export interface ProblemText {
  /** The statuses the service answers with this type. */
  readonly statuses: readonly number[];
  /** What the problem means. */
  readonly meaning: string;
  /** The situations in which the service answers with it. */
  readonly when: readonly string[];
  /** What the client should do about it. */
  readonly whatToDo: readonly string[];
}

const STORED_UNDER_KEY =
  'If the request carried an `Idempotency-Key`, this answer is stored under it: repeating the request with that ' +
  'key replays it, so a changed request needs a new key.';
const NOT_STORED_UNDER_KEY =
  'This answer is not stored under an `Idempotency-Key`: a corrected request may reuse the same key.';

export const PROBLEM_TEXTS: { readonly [S in ProblemSlug]: ProblemText } = {
  'malformed-json': {
    statuses: [400],
    meaning: 'The request body could not be read as JSON, so nothing in it was looked at.',
    when: [
      'The body is not valid JSON (a syntax error; `detail` quotes the parser).',
      'The body is empty on a request that needs one.',
      'The body is not valid UTF-8.',
      'Arrays and objects in the body are nested deeper than 32 levels (contract §11), on every route that takes ' +
        'a body.',
    ],
    whatToDo: [
      'Send exactly one JSON value, encoded in UTF-8, nested at most 32 levels deep.',
      'Do not repeat the request unchanged: it will be refused again.',
      NOT_STORED_UNDER_KEY,
    ],
  },
  'invalid-query': {
    statuses: [400],
    meaning: 'The query string of a collection request breaks its rules; nothing is ever silently ignored.',
    when: [
      'A parameter the collection does not document, a repeated parameter, or a value that does not parse ' +
        '(`page` below 1, `pageSize` outside 1–100, a `status` that is not one of `pending`, `paid`, `shipped`, ' +
        '`delivered`, `cancelled`, an id that is not a positive integer, a negative `minTotal`).',
      'A `sort` key the collection does not know, a key given twice, or an empty key.',
      '`page` deeper than 10,000 rows: `(page - 1) × pageSize` must be below 10000 (`page=501` with the default ' +
        '`pageSize` of 20 is refused).',
      'A `cursor` that was made for other filters or another `sort`, that is not one the service made (changed, ' +
        'cut short, or from another collection), or a `cursor` given together with `page`.',
      'A customer asks for `/order-items` or `/payments` without `orderId`, which customers must give.',
      '`after` on `/events` names no event of yours that is still kept.',
    ],
    whatToDo: [
      'Read `errors`: one `{"parameter", "detail"}` entry per offending parameter. Fix or remove each, then send ' +
        'the request again.',
      'To go deeper than 10,000 rows, follow the `next` link (`Link: <…>; rel="next"`, or `meta.next`) page after ' +
        'page: it carries a `cursor` instead of `page`, and costs the same at any depth. Use the link as given: ' +
        'keep its filters and `sort` (only `pageSize` may change), and do not add `page`.',
      'The parameters each collection takes are listed in the OpenAPI document (`/openapi.json`, or `/docs`).',
    ],
  },
  'invalid-header': {
    statuses: [400],
    meaning: 'A request header that the service reads is malformed.',
    when: [
      '`Idempotency-Key` is not 1–255 visible ASCII characters, bare or as a quoted structured-field string.',
      '`If-Match` or `If-None-Match` is neither `*` nor a comma-separated list of entity tags such as `"abc"` or ' +
        '`W/"abc"`.',
    ],
    whatToDo: [
      'Fix the header named in `detail`. Send entity tags exactly as the `ETag` field gave them, quotes included.',
      NOT_STORED_UNDER_KEY,
    ],
  },
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
  unauthorized: {
    statuses: [401],
    meaning: 'The request needs a valid bearer token, and it had none.',
    when: [
      'No `Authorization` header on a route that needs a token (the OpenAPI document, `/openapi.json`, names the ' +
        'scope of each; the catalog, `/openapi.json`, `/docs`, `/problems/…`, `/healthz` and `/readyz` need none).',
      'A token that is malformed, unknown, expired or revoked (a revoked token stops working within 5 seconds).',
      'The answer carries `WWW-Authenticate: Bearer realm="orders"`, with `error="invalid_token"` when a token ' +
        'was sent.',
    ],
    whatToDo: [
      'Send `Authorization: Bearer <token>` with a token an operator made for you (`orders token create`).',
      'If the token expired or was revoked, ask for a new one: retrying with the same token will not help.',
    ],
  },
  forbidden: {
    statuses: [403],
    meaning: 'The token is valid, but it may not do this.',
    when: [
      'The token lacks the scope the route needs; the answer carries ' +
        '`WWW-Authenticate: Bearer error="insufficient_scope", scope="…"` naming it.',
      "A customer acts beyond their role: creating an order for another `customerId`, changing an order's " +
        '`customerId`, making a transition only an admin may make (`paid` → `shipped` or `cancelled`, `shipped` → ' +
        '`delivered`).',
      'A customer calls a route for admins only: `POST /users`, the webhook endpoints.',
    ],
    whatToDo: [
      "Use a token with the scope named in `WWW-Authenticate`, or an admin's token for what only an admin may do.",
      "Another customer's resources are never refused with 403: they are 404, as if missing.",
      NOT_STORED_UNDER_KEY,
    ],
  },
  'not-found': {
    statuses: [404],
    meaning: 'There is no resource at this path for you.',
    when: [
      'No route has this path: a typing error, a trailing slash or an empty segment (`/orders/`, `//orders`), a ' +
        'dot-segment or backslash (`/v1/orders/../users`), an id that is not a positive integer, or a version ' +
        'prefix on a path that takes none (`/v1/healthz`).',
      'The resource does not exist, was deleted, or belongs to another customer (its existence is not revealed).',
      'An unknown problem type (`/problems/<slug>`) or file of `/docs`.',
    ],
    whatToDo: [
      'Check the path and the id. A customer sees only their own orders, items, payments and user record.',
      'Do not retry unless you expect the resource to be created by someone else.',
    ],
  },
  'method-not-allowed': {
    statuses: [405],
    meaning: 'The path exists, but not with this method.',
    when: [
      "Any method the path does not take, `TRACE` and `CONNECT` included; the answer's `Allow` lists the methods " +
        'it takes.',
    ],
    whatToDo: ['Use one of the methods in `Allow`; `OPTIONS` on the path lists them too.'],
  },
  'not-acceptable': {
    statuses: [406],
    meaning: 'Nothing the `Accept` header allows can be produced for this resource (RFC 9110 §12.5.1).',
    when: [
      'On the API routes: `Accept` allows neither `application/json` nor the vendor type of the version in use ' +
        '(`application/vnd.orders.v1+json`, `application/vnd.orders.v2+json`).',
      'The version in the path and the one in `Accept` disagree: a `/v1` path whose `Accept` allows only ' +
        '`application/vnd.orders.v2+json`, or the reverse.',
      'On `/problems/<slug>`: `Accept` allows none of `text/html`, `text/markdown` and `application/json`.',
    ],
    whatToDo: [
      'Send an `Accept` that includes one of the media types `detail` lists, or none at all (which means anything).',
      'Choose the version in one place, or make both places say the same.',
    ],
  },
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
  'version-sunset': {
    statuses: [410],
    meaning: 'Version 1 of the API has been retired (its sunset date has passed); version 2 answers instead.',
    when: [
      'After `V1_SUNSET_AT` (by default 2027-06-01T00:00:00Z), every request served in version 1: a `/v1` path, ' +
        '`Accept: application/vnd.orders.v1+json`, or a path with no version and no vendor type (which is served ' +
        'as version 1).',
      'Before that date, version 1 answers normally and warns with `Deprecation`, `Sunset` and a `Link` to the ' +
        'successor version.',
    ],
    whatToDo: [
      'Move to version 2: prefix the path with `/v2` (`detail` gives it), or send ' +
        '`Accept: application/vnd.orders.v2+json`.',
      'Version 2 writes money as `{"amount": "59.90", "currency": "EUR"}` instead of a number and a `currency` ' +
        'field; nothing else changed.',
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
  'payload-too-large': {
    statuses: [413],
    meaning: 'The request body is larger than the service accepts (contract §11); the rest of it was not read.',
    when: [
      'A body longer than `MAX_BODY_BYTES` (by default 1048576 bytes, 1 MiB), whether announced by ' +
        '`Content-Length` or found while reading a chunked body. `detail` gives the limit. The connection is then ' +
        'closed.',
    ],
    whatToDo: [
      'Send a smaller body. No valid request needs this much: an order has at most 100 items.',
      NOT_STORED_UNDER_KEY,
    ],
  },
  'request-timeout': {
    statuses: [408],
    meaning: 'The request body did not arrive in time, so the request was not executed.',
    when: [
      'The whole body was not received within 30 seconds, for instance because `Content-Length` announced more ' +
        'bytes than were sent. The connection is then closed. (contract §5 lists no type for this; ' +
        '`docs/foundation.md` explains why it was added.)',
    ],
    whatToDo: [
      'Check that the client sends the whole body and that `Content-Length` matches it, then retry on a new ' +
        'connection.',
      'Nothing was executed: a retry with the same `Idempotency-Key` runs anew.',
    ],
  },
  'unsupported-media-type': {
    statuses: [415],
    meaning: 'The request body is in a media type this route does not take.',
    when: [
      'A body without `Content-Type`, or with a type other than `application/json`, ' +
        '`application/vnd.orders.v1+json` or `application/vnd.orders.v2+json` (and, on `PATCH`, ' +
        '`application/merge-patch+json`).',
      'A `charset` other than UTF-8.',
      'The vendor type of the other version than the request is served in (`POST /v1/orders` with ' +
        '`application/vnd.orders.v2+json`).',
      'On `PATCH`, the answer carries `Accept-Patch` with the types it takes.',
      'A body sent with a `Content-Encoding` other than `identity` (`gzip`, `br`…): request bodies are taken ' +
        'uncompressed only, and the answer carries `Accept-Encoding: identity` (RFC 7694). Nothing was executed.',
    ],
    whatToDo: [
      'Send `Content-Type: application/json` (UTF-8), or the vendor type of the version in the path, and the body ' +
        'uncompressed, without `Content-Encoding`.',
      NOT_STORED_UNDER_KEY,
    ],
  },
  validation: {
    statuses: [422],
    meaning:
      'The body is well-formed JSON, but what it says is not valid here; `errors` holds one JSON Pointer into ' +
      'the body per problem.',
    when: [
      'A member is missing, has the wrong type or is out of range (1–100 items, `qty` 1–1000), or is unknown: ' +
        'unknown members are refused, never ignored. The body is not a JSON object, or a merge patch sets a member ' +
        'to `null`.',
      'A rule of the resource: an unknown product, a product given twice, products in different currencies, an ' +
        'order total too large; an admin creating an order without `customerId`, or for a user that does not ' +
        'exist; an e-mail address already in use; a webhook URL that is not allowed.',
      'A payment whose `orderId` names no order of yours, or whose amount is not exactly the order total (a ' +
        "version 1 amount is compared as the decimal you wrote), or whose currency is not the order's.",
      'A body that holds more than any request can: over 1,000 elements in one array or members in one object, or ' +
        'over 10,000 values in all; refused before it is parsed, at the array or object that is too big.',
    ],
    whatToDo: [
      'Fix each member that `errors` points at (at most 20 are listed; `detail` says how many more), then send ' +
        'the corrected request.',
      STORED_UNDER_KEY,
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
  'rate-limited': {
    statuses: [429],
    meaning: 'You have made more requests in the current window than the rate limit allows (contract §10).',
    when: [
      'More than `RATE_LIMIT` requests (by default 600 per 60 seconds) in one window, counted per user for ' +
        'requests with a valid token, and per client address (an IPv4 address or an IPv6 /64) for the others.',
      'Every answer carries `RateLimit-Policy` and `RateLimit` (`r` requests remaining, `t` seconds to the ' +
        'reset); this one carries `Retry-After`.',
    ],
    whatToDo: [
      'Wait the seconds of `Retry-After`, then continue more slowly, watching the `r` of `RateLimit`.',
      'Nothing was executed: a retry with the same `Idempotency-Key` runs anew.',
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
    meaning: 'The service cannot reach its database right now; it recovers by itself when the database returns.',
    when: [
      'The database refuses or drops connections, is restarting or failing over, has no free connections, or ' +
        'does not answer within 5 seconds. The answer carries `Retry-After`.',
      '`GET /readyz` answers it while the database does not answer.',
    ],
    whatToDo: [
      'Retry after the seconds of `Retry-After`, waiting longer after each failure.',
      'Send writes with an `Idempotency-Key` and retry with the same key: a write that did commit before the ' +
        'answer was lost is then replayed instead of made twice.',
    ],
  },
};
