/**
 * Conditional requests (contract §8, §9), in two stages. The preconditions stage parses the conditions outside the
 * idempotency stage, so a malformed one is 400 before any handler runs or key is claimed. The conditional stage,
 * inside it, is the one place a 2xx is finished (`finish()`: media type, `ETag`, `Cache-Control`, 304), so a keyed
 * POST's answer is stored finished; a route's `currentTag` answers a match with 304 before its handler runs.
 */
import { type Conditions, parseConditions } from '../../http/conditional.ts';
import { finish, notModifiedEarly, type FinishOptions } from '../../http/semantics.ts';
import type { Next, Stage } from '../compose.ts';
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
  // Not an async function: a request waiting for its handler holds a callback here, not a suspended frame.
  return (x, next) => {
    const route = routeOf(x);
    const { method } = x.request;
    const { conditions } = x;
    if (conditions === undefined)
      return Promise.reject(new Error('the conditional stage ran outside the preconditions stage'));
    const options: FinishOptions = { cache: route.plan.cache, contentType: x.contentType, cacheMaxAge };
    const { currentTag } = route;
    if (currentTag !== undefined && conditions.ifNoneMatch !== null)
      return revalidated(x, next, conditions, () => currentTag(contextOf(x, x.tagSource?.handle(x.scope))), options);
    return next(x).then((response) => finished(method, conditions, response, options));
  };
}

/** A GET with `If-None-Match` on a route that finds its tag alone: 304 from the tag, else the handler's answer. */
async function revalidated(
  x: Exchange,
  next: Next<Exchange>,
  conditions: Conditions,
  tag: () => Promise<string>,
  options: FinishOptions,
): Promise<Response> {
  const { method } = x.request;
  const early = await notModifiedEarly(method, conditions, tag, options);
  if (early !== undefined) return early;
  return finished(method, conditions, await next(x), options);
}

/** The handler's `response` as the client receives it: a success finished (tag, caching, 304), else as it is. */
function finished(
  method: string,
  conditions: Conditions,
  response: Response,
  options: FinishOptions,
): Response | Promise<Response> {
  return response.status < 300 ? finish(method, conditions, response, options) : response;
}
