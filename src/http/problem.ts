/**
 * RFC 9457 problem details, the one way every error leaves the service (contract §5): handlers throw an
 * `HttpError`; the pipeline turns it, or any other exception, into a `Response`.
 */
import { bufferedResponse, fieldsOf } from './response.ts';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** The problem types of contract §5, by slug, with their titles. */
export const PROBLEM_TITLES = {
  'malformed-json': 'Request body is not valid JSON',
  'invalid-query': 'Query string is invalid',
  'invalid-header': 'A request header is invalid',
  'idempotency-key-missing': 'Idempotency-Key header is required',
  unauthorized: 'Authentication is required',
  forbidden: 'Not allowed',
  'not-found': 'Resource not found',
  'method-not-allowed': 'Method not allowed',
  'not-acceptable': 'No acceptable representation',
  'invalid-transition': 'Status transition is not allowed',
  'order-not-editable': 'Order can no longer be edited',
  'order-has-payments': 'Order has payments',
  'order-not-payable': 'Order cannot be paid',
  'idempotency-key-in-use': 'A request with this Idempotency-Key is still being processed',
  'version-sunset': 'API version is no longer available',
  'precondition-failed': 'Precondition failed',
  'payload-too-large': 'Request body is too large',
  'request-timeout': 'Request was not received in time',
  'unsupported-media-type': 'Unsupported media type',
  validation: 'Request body is invalid',
  'idempotency-key-mismatch': 'Idempotency-Key was used with another request',
  'rate-limited': 'Too many requests',
  internal: 'Internal server error',
  unavailable: 'Service unavailable',
  'outcome-unknown': 'The outcome of the request is unknown',
} as const;

export type ProblemSlug = keyof typeof PROBLEM_TITLES;

/** A pointer into the body (`/items/0/qty`) or a query parameter, with what is wrong with it. */
export type ProblemError =
  | { readonly pointer: string; readonly detail: string }
  | { readonly parameter: string; readonly detail: string };

/** contract §11: the most entries a problem's `errors` list holds; the detail says how many more there are. */
export const MAX_PROBLEM_ERRORS = 20;

/** `errors` with each entry once (same place, same detail), in their order. */
export function distinctErrors<E extends ProblemError>(errors: readonly E[]): E[] {
  const seen = new Set<string>();
  return errors.filter((e) => {
    const key = JSON.stringify(
      'pointer' in e ? ['pointer', e.pointer, e.detail] : ['parameter', e.parameter, e.detail],
    );
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** The entries a problem lists: each distinct one once, at most `MAX_PROBLEM_ERRORS`; and how many are left out. */
export function listedErrors<E extends ProblemError>(errors: readonly E[]): { listed: E[]; omitted: number } {
  const distinct = distinctErrors(errors);
  return { listed: distinct.slice(0, MAX_PROBLEM_ERRORS), omitted: Math.max(0, distinct.length - MAX_PROBLEM_ERRORS) };
}

export interface ProblemInit {
  readonly detail?: string;
  readonly errors?: readonly ProblemError[];
  /** Extra response headers, such as `Allow`, `Retry-After` or `WWW-Authenticate`. */
  readonly headers?: Readonly<Record<string, string>>;
}

/** An error a handler throws to answer with a problem response. */
export class HttpError extends Error {
  override name = 'HttpError';
  readonly status: number;
  readonly slug: ProblemSlug;
  readonly init: ProblemInit;

  constructor(status: number, slug: ProblemSlug, init: ProblemInit = {}) {
    super(init.detail ?? PROBLEM_TITLES[slug]);
    this.status = status;
    this.slug = slug;
    this.init = init;
  }
}

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance: string;
  requestId: string;
  errors?: readonly ProblemError[];
}

/**
 * The problem response for `error` at `instance` (the path without its query, which may hold personal values),
 * never cached; `errors` cut to `listedErrors()`, so that a hostile request cannot make a huge answer.
 */
export function problemResponse(error: HttpError, instance: string, requestId: string): Response {
  const errors = error.init.errors === undefined ? undefined : listedErrors(error.init.errors);
  const more =
    errors === undefined || errors.omitted === 0
      ? undefined
      : `${errors.omitted} more ${errors.omitted === 1 ? 'error is' : 'errors are'} not listed.`;
  const detail =
    more === undefined ? error.init.detail : error.init.detail === undefined ? more : `${error.init.detail} ${more}`;
  const body: ProblemBody = {
    type: `/problems/${error.slug}`,
    title: PROBLEM_TITLES[error.slug],
    status: error.status,
    ...(detail === undefined ? {} : { detail }),
    instance,
    requestId,
    ...(errors === undefined ? {} : { errors: errors.listed }),
  };
  const response = bufferedResponse(Buffer.from(JSON.stringify(body), 'utf8'), {
    status: error.status,
    ...(error.init.headers === undefined ? {} : { headers: error.init.headers }),
  });
  const fields = fieldsOf(response);
  fields.set('content-type', PROBLEM_CONTENT_TYPE);
  fields.set('cache-control', 'no-store');
  return response;
}

/** The 500 answer for an unexpected exception: no message, stack or SQL reaches the client. */
export function internalError(): HttpError {
  return new HttpError(500, 'internal', {
    detail: 'The server failed to handle the request; the log has the details under the requestId.',
  });
}

/**
 * contract §17: a write was sent to the database and no answer came: it may have been done. 503, so that the
 * client retries with its `Idempotency-Key`, which replays the stored answer or does the work once.
 */
export function outcomeUnknownError(): HttpError {
  return new HttpError(503, 'outcome-unknown', {
    detail:
      'The request was sent to the database and no answer came back: it may or may not have been done. Retry ' +
      'it with the same Idempotency-Key, or look the resource up.',
    headers: { 'retry-after': '1' },
  });
}

/** The 503 answer while the database cannot be reached. */
export function unavailableError(detail = 'The database cannot be reached; try again shortly.'): HttpError {
  return new HttpError(503, 'unavailable', { detail, headers: { 'retry-after': '5' } });
}
