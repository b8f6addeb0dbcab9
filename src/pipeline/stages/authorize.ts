/**
 * Authentication, the user's rate limit and the route's scope (contract §5,
 * §6, §10), in that order: a valid token is counted against its user before
 * its scope is checked, so a token without the scope cannot probe for free.
 * A public route that is rate limited counts against the client address.
 *
 * A credential that is refused (an unknown, expired or revoked token; a
 * wrong `METRICS_TOKEN`) counts as a failed authentication of the client
 * address, in a window of its own; the failure that passes the limit is
 * answered 429, and so is every credential of that address after it until
 * its window ends, before any is looked at: the refused request runs no
 * statement, and guessing gains nothing past the limit. A request with no
 * credential at all guesses nothing, and is not counted as a failure.
 */
import { insufficientScope, type Authenticator, type Principal } from '../../auth/authenticator.ts';
import { HttpError } from '../../http/problem.ts';
import { addressGroup } from '../../http/rate-limit.ts';
import type { Stage } from '../compose.ts';
import { routeOf, type Exchange } from '../exchange.ts';
import type { LimitTable } from '../../limits/shared-limits.ts';
import { rateLimited, type Limits } from './limits.ts';

export function authorize(authenticator: Authenticator, limits: Limits | undefined): Stage<Exchange> {
  return async (x, next) => {
    const route = routeOf(x);
    const { credential } = route;
    const authorization = x.header('authorization');
    if (route.auth !== 'public') {
      refuseBarred(x, limits, authorization);
      let principal: Principal;
      try {
        principal = await authenticator.authenticate(authorization, x.scope);
      } catch (error) {
        throw await failure(x, limits, authorization, error);
      }
      x.principal = principal;
      if (limits !== undefined) await countOrRefuse(x, limits, 'users', String(principal.userId));
      if (!principal.scopes.has(route.auth)) throw insufficientScope(route.auth);
    } else {
      if (credential !== undefined) {
        refuseBarred(x, limits, authorization);
        try {
          credential(authorization, x.services);
        } catch (error) {
          throw await failure(x, limits, authorization, error);
        }
      }
      if (limits !== undefined && limits.limited(route) === true)
        await countOrRefuse(x, limits, 'addresses', addressGroup(x.address));
    }
    return next(x);
  };
}

/** Counts `key` in `table` and throws 429 past the limit; the decision is the exchange's. */
async function countOrRefuse(x: Exchange, limits: Limits, table: LimitTable, key: string): Promise<void> {
  x.rate = await limits.count(table, key);
  if (!x.rate.allowed) throw rateLimited(x.rate);
}

/** 429 for a credential from an address whose failed authentications are past the limit: it is not looked at. */
function refuseBarred(x: Exchange, limits: Limits | undefined, authorization: string | null): void {
  if (limits === undefined || authorization === null) return;
  const barred = limits.barred(x.address);
  if (barred === undefined) return;
  x.rate = barred;
  throw rateLimited(barred);
}

/**
 * What to throw for `error`, thrown while a credential was checked: a 401 for a credential sent counts as a
 * failure of the address, and the failure past the limit is answered 429, as the ones after it will be (it says
 * nothing of the credential); anything else as it is.
 */
async function failure(x: Exchange, limits: Limits | undefined, authorization: string | null, error: unknown) {
  if (limits === undefined || authorization === null) return error;
  if (!(error instanceof HttpError) || error.status !== 401) return error;
  x.rate = await limits.failed(x.address);
  return x.rate.allowed ? error : rateLimited(x.rate);
}
