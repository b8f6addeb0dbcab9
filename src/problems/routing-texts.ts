/** Routing and negotiation: the path, the method, the media type and the API version. */
import type { ProblemTexts } from './problem-text.ts';

export const ROUTING_TEXTS = {
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
} satisfies ProblemTexts;
