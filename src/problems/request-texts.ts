/** The request's form: its body, its query string and the fields the service reads; refused before anything runs. */
import { STORED_UNDER_KEY, NOT_STORED_UNDER_KEY, type ProblemTexts } from './problem-text.ts';

export const REQUEST_TEXTS = {
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
  'payload-too-large': {
    statuses: [413],
    meaning: 'The request body is larger than the service accepts (contract §11); the rest of it was not read.',
    when: [
      'A body longer than `MAX_BODY_BYTES` (by default 1048576 bytes, 1 MiB), whether announced by ' +
        '`Content-Length` (refused before any of it is read) or found while reading a chunked body. `detail` ' +
        'gives the limit. The connection is then closed.',
      'A body sent in more pieces than its size warrants: more than 256 reads or chunks and one more per 256 ' +
        'bytes (one-byte chunks, say). `detail` says how many came. The connection is closed.',
    ],
    whatToDo: [
      'Send a smaller body, in fewer and larger writes. No valid request needs this much: an order has at most ' +
        '100 items.',
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
} satisfies ProblemTexts;
