/**
 * Conditional requests and the finishing rules (contract §8, §9), in two
 * stages. The preconditions stage parses the request's `If-None-Match`
 * (GET, HEAD) and `If-Match` (where the route checks it) once, outside the
 * idempotency stage: a malformed one is 400 before any handler runs or key
 * is claimed, whatever the resource. The conditional stage, inside it, is the
 * one place an answer is finished: a route that knows its tag without
 * building the answer (an order's revision) answers a matching
 * `If-None-Match` with 304 before its handler runs, its tag read where the
 * replica stage says; every 2xx the handler gives is finished (`finish()`:
 * media type, `ETag`, `Cache-Control`, 304) once, and a keyed POST's
 * answer is stored as this stage finished it.
 */
import { parseConditions } from '../../http/conditional.ts';
import { finish, notModifiedEarly, type FinishOptions } from '../../http/semantics.ts';
import type { Stage } from '../compose.ts';
import { contextOf, routeOf, type Exchange } from '../exchange.ts';

export function preconditions(): Stage<Exchange> {
  return (x, next) => {
    const safe = x.request.method === 'GET' || x.request.method === 'HEAD';
    x.conditions = parseConditions(
      safe ? x.header('if-none-match') : null,
      routeOf(x).plan.ifMatch ? x.header('if-match') : null,
    );
    return next(x);
  };
}

export function conditional(cacheMaxAge: number): Stage<Exchange> {
  return async (x, next) => {
    const route = routeOf(x);
    const { method } = x.request;
    const { conditions } = x;
    if (conditions === undefined) throw new Error('the conditional stage ran outside the preconditions stage');
    const options: FinishOptions = { cache: route.plan.cache, contentType: x.contentType, cacheMaxAge };
    const { currentTag } = route;
    if (currentTag !== undefined && conditions.ifNoneMatch !== null) {
      const tags = x.tagSource?.handle(x.scope);
      const early = await notModifiedEarly(method, conditions, () => currentTag(contextOf(x, tags)), options);
      if (early !== undefined) return early;
    }
    const response = await next(x);
    return response.status < 300 ? finish(method, conditions, response, options) : response;
  };
}
