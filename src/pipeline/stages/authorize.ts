/**
 * Authentication, the user's rate limit and the route's scope (contract §5,
 * §6, §10), in that order: a valid token is counted against its user before
 * its scope is checked, so a token without the scope cannot probe for free.
 * A public route that is rate limited counts against the client address.
 */
import { insufficientScope, type Authenticator } from '../../auth/authenticator.ts';
import { addressGroup } from '../../http/rate-limit.ts';
import type { Stage } from '../compose.ts';
import { routeOf, type Exchange } from '../exchange.ts';
import { countOrRefuse, type Limits } from './limits.ts';

export function authorize(authenticator: Authenticator, limits: Limits | undefined): Stage<Exchange> {
  return async (x, next) => {
    const route = routeOf(x);
    if (route.auth !== 'public') {
      const principal = await authenticator.authenticate(x.header('authorization'));
      x.principal = principal;
      if (limits !== undefined) await countOrRefuse(x, limits, 'users', String(principal.userId));
      if (!principal.scopes.has(route.auth)) throw insufficientScope(route.auth);
    } else if (limits !== undefined && limits.limited(route) === true) {
      await countOrRefuse(x, limits, 'addresses', addressGroup(x.address));
    }
    return next(x);
  };
}
