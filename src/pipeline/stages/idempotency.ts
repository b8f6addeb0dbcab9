/**
 * Idempotency keys (contract §7): an authenticated POST with a well-formed
 * `Idempotency-Key` runs once per (user, key), in the savepoint its stored
 * answer commits with (src/pipeline/idempotency.ts); a malformed key is 400,
 * and a route that requires one refuses a POST without it.
 */
import { NO_CONDITIONS } from '../../http/conditional.ts';
import { fingerprint, parseIdempotencyKey } from '../../http/idempotency-key.ts';
import { HttpError } from '../../http/problem.ts';
import { finish } from '../../http/semantics.ts';
import type { Stage } from '../compose.ts';
import { dbOf, routeOf, type Exchange } from '../exchange.ts';
import { runIdempotent } from '../idempotency.ts';

export function idempotency(cacheMaxAge: number): Stage<Exchange> {
  return async (x, next) => {
    const { principal } = x;
    const { method } = x.request;
    if (method !== 'POST' || principal === undefined) return next(x);
    const parsed = parseIdempotencyKey(x.header('idempotency-key'));
    if (!parsed.ok) throw new HttpError(400, 'invalid-header', { detail: parsed.detail });
    if (parsed.key === undefined) {
      if (routeOf(x).idempotency !== 'required') return next(x);
      throw new HttpError(400, 'idempotency-key-missing', {
        detail: `${method} ${x.url.pathname} needs an Idempotency-Key header.`,
      });
    }
    const request = {
      principal,
      key: parsed.key,
      fingerprint: fingerprint(method, `${x.url.pathname} v${x.version ?? 1}`, x.body),
      instance: x.url.pathname,
      requestId: x.requestId,
    };
    // The stored answer is the finished one (its ETag and media type), as the client first received it.
    const options = { cache: 'no-store', contentType: x.contentType, cacheMaxAge } as const;
    const finishing = (response: Response) => finish(method, x.conditions ?? NO_CONDITIONS, response, options);
    return runIdempotent(
      dbOf(x),
      request,
      (savepoint) => {
        x.savepoint = savepoint;
        return next(x);
      },
      finishing,
      routeOf(x).refusesBeforeWriting !== true,
    );
  };
}
