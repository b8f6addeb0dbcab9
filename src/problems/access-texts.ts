/** Who may call, and how often: authentication, scopes and roles, and the rate limit. */
import { NOT_STORED_UNDER_KEY, type ProblemTexts } from './problem-text.ts';

export const ACCESS_TEXTS = {
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
} satisfies ProblemTexts;
