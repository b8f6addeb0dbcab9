/**
 * Authentication, the user's rate limit and the route's scope (contract §5, §6), in that order: a token is
 * counted against its user before its scope is checked, so a token without the scope cannot probe for free.
 *
 * Failed authentication costs the guesser, never the honest (contract §10). A wrong tag, or no token of ours, is
 * refused without a lookup and not counted. A tagged token, or an untagged one validated lately, is never refused
 * for what others did from its address. Any other guess (a wrong `METRICS_TOKEN` too) counts against its
 * address in a window of its own, and past the limit the address's guesses are 429 before any lookup.
 */
import { insufficientScope, type Authenticator, type Principal } from '../../auth/authenticator.ts';
import { HttpError } from '../../http/problem.ts';
import { addressGroup } from '../../http/rate-limit.ts';
import type { RateDecision } from '../../http/rate-limit.ts';
import type { LimitTable } from '../../limits/shared-limits.ts';
import { unwinding, Unwinding, type Answer, type Decisions } from '../answer.ts';
import type { Stage } from '../compose.ts';
import { routeOf, type Exchange } from '../exchange.ts';
import { withinDeadline } from './body.ts';
import { rateLimited, type Limits } from './limits.ts';

export function authorize(authenticator: Authenticator, limits: Limits | undefined): Stage<Exchange, Answer> {
  // Not an async function: a request waiting inward holds callbacks here, not a suspended frame.
  return (x, next) => {
    // Nearly every request: a token validated lately, counted in this process's windows, decided without a wait.
    const known = admitKnown(x, authenticator, limits);
    if (known instanceof Unwinding) return Promise.reject(known);
    if (known !== undefined) return decided(next(x), known);
    // The lookup and the counts wait for the database or Redis: raced against the request's clock.
    return withinDeadline(x, admit(x, authenticator, limits)).then(
      (decisions) => (decisions === NONE ? next(x) : decided(next(x), decisions)),
      (error: unknown) => {
        // A refusal carries its decisions; a clock that ran out during the user's count leaves the principal found.
        throw error instanceof Unwinding || x.principal === undefined
          ? error
          : unwinding(error, { principal: x.principal });
      },
    );
  };
}

/**
 * What `admit` decides, without its waits, for a token validated lately whose user is counted in this process's
 * windows: the decisions, or the refusal (429, 403) carrying them. `undefined`, nothing counted: `admit` decides.
 */
function admitKnown(
  x: Exchange,
  authenticator: Authenticator,
  limits: Limits | undefined,
): Decisions | Unwinding | undefined {
  const route = routeOf(x);
  if (route.auth === 'public') return undefined;
  const principal = authenticator.known?.(x.header('authorization'));
  if (principal === undefined) return undefined;
  const rate = limits?.countNow('users', String(principal.userId));
  if (limits !== undefined && rate === undefined) return undefined;
  x.principal = principal;
  const decisions: Decisions = rate === undefined ? { principal } : { principal, rate };
  if (rate !== undefined && !rate.allowed) return unwinding(rateLimited(rate), decisions);
  return principal.scopes.has(route.auth) ? decisions : unwinding(insufficientScope(route.auth), decisions);
}

/** The answer of the stages inside, or their error, handed outward with this stage's decisions. */
function decided(inner: Promise<Answer>, decisions: Decisions): Promise<Answer> {
  return inner.then(
    (answer) => {
      if (decisions.principal !== undefined) answer.principal = decisions.principal;
      if (decisions.rate !== undefined) answer.rate = decisions.rate;
      return answer;
    },
    (error: unknown) => {
      throw unwinding(error, decisions);
    },
  );
}

/** The principal and rate decision of a request that may go on; a refusal is thrown with those made before it. */
async function admit(x: Exchange, authenticator: Authenticator, limits: Limits | undefined): Promise<Decisions> {
  const route = routeOf(x);
  const { credential } = route;
  const authorization = x.header('authorization');
  if (route.auth !== 'public') {
    let guessed = false;
    let principal: Principal;
    try {
      principal = await authenticator.authenticate(authorization, x.scope, () => {
        refuseBarred(x, limits, authorization);
        guessed = true;
      });
    } catch (error) {
      throw guessed ? await failure(x, limits, authorization, error) : error;
    }
    x.principal = principal;
    const rate = limits === undefined ? undefined : await counted(limits, 'users', String(principal.userId), principal);
    const decided: Decisions = rate === undefined ? { principal } : { principal, rate };
    if (!principal.scopes.has(route.auth)) throw unwinding(insufficientScope(route.auth), decided);
    return decided;
  }
  if (credential !== undefined) {
    try {
      credential(authorization, x.services);
    } catch (error) {
      // A right value passes whatever its address did; a wrong one from a barred address is 429, unchecked.
      refuseBarred(x, limits, authorization);
      throw await failure(x, limits, authorization, error);
    }
  }
  if (limits !== undefined && limits.limited(route) === true)
    return { rate: await counted(limits, 'addresses', addressGroup(x.address)) };
  return NONE;
}

/** A public route's request, not counted: nothing to hand outward. */
const NONE: Decisions = Object.freeze({});

/** Counts `key` in `table`: the decision, or 429 past the limit (with it, and the principal when there is one). */
async function counted(limits: Limits, table: LimitTable, key: string, principal?: Principal): Promise<RateDecision> {
  const rate = await limits.count(table, key);
  if (!rate.allowed) throw unwinding(rateLimited(rate), principal === undefined ? { rate } : { principal, rate });
  return rate;
}

/** 429, unread, for a credential from a barred address. */
function refuseBarred(x: Exchange, limits: Limits | undefined, authorization: string | null): void {
  if (limits === undefined || authorization === null) return;
  const barred = limits.barred(x.address);
  if (barred === undefined) return;
  throw unwinding(rateLimited(barred), { rate: barred });
}

/** A credential's check threw `error`: a 401 counts as a failure of the address, and past the limit becomes 429. */
async function failure(x: Exchange, limits: Limits | undefined, authorization: string | null, error: unknown) {
  if (limits === undefined || authorization === null) return error;
  if (!(error instanceof HttpError) || error.status !== 401) return error;
  const rate = await limits.failed(x.address);
  return unwinding(rate.allowed ? error : rateLimited(rate), { rate });
}
