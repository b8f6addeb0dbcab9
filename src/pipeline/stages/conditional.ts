/**
 * Conditional requests (contract §8, §9), in two stages. The preconditions stage parses the conditions outside the
 * idempotency stage, so a malformed one is 400 before any handler runs or key is claimed. The conditional stage,
 * inside it, is the one place a 2xx is finished (`finish()`: media type, `ETag`, `Cache-Control`, 304), so a keyed
 * POST's answer is stored finished; a route's `currentTag` answers a match with 304 before its handler runs.
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
