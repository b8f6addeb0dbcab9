/**
 * Conditional requests and the finishing rules (contract §8, §9): the
 * request's `If-None-Match` (GET, HEAD) and `If-Match` (where the route
 * checks it) are parsed once, here, and a malformed one is 400 before any
 * handler runs, whatever the resource. A route that knows its tag without
 * building the answer (an order's revision) answers a matching
 * `If-None-Match` with 304 before its handler runs; every 2xx is finished
 * (`finish()`: media type, `ETag`, `Cache-Control`, 304).
 */
import { parseConditions } from '../../http/conditional.ts';
import { finish, notModifiedEarly, type FinishOptions } from '../../http/semantics.ts';
import type { Stage } from '../compose.ts';
import { contextOf, routeOf, type Exchange } from '../exchange.ts';
import { MISSED } from './replica.ts';

export function conditional(cacheMaxAge: number): Stage<Exchange> {
  return async (x, next) => {
    const route = routeOf(x);
    const { method } = x.request;
    const safe = method === 'GET' || method === 'HEAD';
    // Once per request: the replica stage may run this stage again, on the primary.
    x.conditions ??= parseConditions(
      safe ? x.header('if-none-match') : null,
      route.doc.ifMatch === true ? x.header('if-match') : null,
    );
    const { conditions } = x;
    const options: FinishOptions = { cache: route.cache ?? 'no-store', contentType: x.contentType, cacheMaxAge };
    const { currentTag } = route;
    if (currentTag !== undefined && safe && conditions.ifNoneMatch !== null) {
      const early = await notModifiedEarly(method, conditions, () => currentTag(contextOf(x)), options);
      if (early !== undefined) return early;
      if (x.tagOnly) return MISSED;
    }
    const response = await next(x);
    return response.status < 300 ? finish(method, conditions, response, options) : response;
  };
}
