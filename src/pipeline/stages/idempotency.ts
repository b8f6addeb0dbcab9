/**
 * Idempotency keys (contract §7): an authenticated POST with a key runs once per (user, key)
 * (src/pipeline/idempotency.ts); a malformed key is 400, and so is a missing one where the route requires it.
 * Stored and replayed is what the client first received, as the stages inside finished it. A route's
 * `keyedInOneStatement` answer goes to those stages as the handler's would.
 */
import { fingerprint, parseIdempotencyKey } from '../../http/idempotency-key.ts';
import { HttpError } from '../../http/problem.ts';
import type { Principal } from '../../auth/authenticator.ts';
import type { Next, Stage } from '../compose.ts';
import { contextOf, dbOf, routeOf, type Exchange } from '../exchange.ts';
import { answerClaimed, runIdempotent } from '../idempotency.ts';

export function idempotency(): Stage<Exchange> {
  // Not an async function: a GET (and a POST of no principal) passes through without a promise of its own.
  return (x, next) => (routeOf(x).plan.idempotency === 'none' || x.principal === undefined ? next(x) : keyed(x, next));
}

/** A POST of a principal: with a key, once per (user, key); without one, as the route allows. */
async function keyed(x: Exchange, next: Next<Exchange>): Promise<Response> {
  const principal = x.principal as Principal;
  const { method } = x.request;
  const parsed = parseIdempotencyKey(x.header('idempotency-key'));
  if (!parsed.ok) throw new HttpError(400, 'invalid-header', { detail: parsed.detail });
  if (parsed.key === undefined) {
    if (routeOf(x).plan.idempotency !== 'required') return next(x);
    throw new HttpError(400, 'idempotency-key-missing', {
      detail: `${method} ${x.pathname} needs an Idempotency-Key header.`,
    });
  }
  const request = {
    principal,
    key: parsed.key,
    fingerprint: fingerprint(method, `${x.pathname} v${x.version ?? 1}`, x.body),
    instance: x.pathname,
    requestId: x.requestId,
  };
  const once = routeOf(x).keyedInOneStatement;
  const outcome = once === undefined ? undefined : await once(contextOf(x), request);
  if (outcome !== undefined) {
    if ('respond' in outcome) {
      x.respond = outcome.respond;
      return next(x);
    }
    // A key already used: answered as any (a replay, 409, 422); never a first request, which did the work.
    const earlier = answerClaimed(outcome.claim, request);
    if (earlier === undefined) throw new Error(`${x.pathname}: a fresh claim came back from one statement`);
    return earlier;
  }
  return runIdempotent(
    dbOf(x),
    request,
    (savepoint) => {
      x.savepoint = savepoint;
      return next(x);
    },
    routeOf(x).plan.inSavepoint,
  );
}
