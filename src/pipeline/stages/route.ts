/**
 * Routing and content negotiation (contract §8). The route stage answers what the router found: 404, 405
 * with `Allow`, or for OPTIONS 204 with `Allow` (and `Accept-Patch` where PATCH is allowed, RFC 5789 §3.1). The
 * negotiate stage settles the answer's version and media type, and refuses version 1 past its sunset (410).
 */
import { ACCEPT_PATCH } from '../../http/json-body.ts';
import { negotiate, type Version } from '../../http/negotiation.ts';
import { HttpError } from '../../http/problem.ts';
import { bufferedResponse } from '../../http/response.ts';
import type { VersionPolicy } from '../../http/semantics.ts';
import { unwinding, type Answer } from '../answer.ts';
import type { Next, Stage } from '../compose.ts';
import { routeOf, type Exchange } from '../exchange.ts';

/** contract §11: all a connection of the health reserve (past the process's cap) is served; else 503. */
const HEALTH_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz']);

export function route(): Stage<Exchange, Answer> {
  // Not an async function: a routed request on an ordinary connection passes through without a promise of its own.
  return (x, next) => (x.match.kind === 'found' && x.client.healthOnly !== true ? next(x) : refused(x, next));
}

/** A request the route stage answers itself (OPTIONS) or refuses; one of the health reserve's may go on. */
async function refused(x: Exchange, next: Next<Exchange, Answer>): Promise<Answer> {
  const { match } = x;
  if (x.client.healthOnly === true && !HEALTH_PATHS.has(x.path)) {
    throw new HttpError(503, 'unavailable', {
      detail: 'The service holds as many connections as it takes; try again shortly.',
      headers: { 'retry-after': '1', connection: 'close' },
    });
  }
  switch (match.kind) {
    case 'not-found':
      throw new HttpError(404, 'not-found', { detail: `No resource at ${x.path}.` });
    case 'method-not-allowed':
      throw new HttpError(405, 'method-not-allowed', {
        detail: `${x.request.method} is not allowed here; use ${match.allow}.`,
        headers: { allow: match.allow },
      });
    case 'options':
      return {
        response: bufferedResponse(null, {
          status: 204,
          headers: { allow: match.allow, ...(match.allow.includes('PATCH') ? { 'accept-patch': ACCEPT_PATCH } : {}) },
        }),
      };
  }
  return next(x);
}

export function negotiation(versions: VersionPolicy): Stage<Exchange, Answer> {
  // Not an async function: a request waiting inward holds two callbacks here, not a suspended frame.
  return (x, next) => {
    const route = routeOf(x);
    if (route.versioned === false) return next(x);
    const prefix = x.match.version;
    const negotiated = negotiate(x.header('accept'), prefix);
    let version: Version;
    if (negotiated.ok) {
      version = negotiated.version;
      x.contentType = negotiated.contentType;
    } else if (route.plan.noContent) {
      // contract §4: a success with no body (DELETE → 204) is not refused for its Accept
      // (`application/problem+json`, as RFC 9457 clients send); its problems are problem+json anyway.
      version = prefix ?? 1;
    } else {
      return Promise.reject(new HttpError(406, 'not-acceptable', { detail: negotiated.detail }));
    }
    x.version = version;
    // Handed outward with the answer (version 1's deprecation fields), an error's too.
    const refused = (error: unknown) => Promise.reject(unwinding(error, { version }));
    try {
      if (version === 1) versions.refuseWhenSunset(x.pathname);
    } catch (error) {
      return refused(error);
    }
    return next(x).then((answer) => {
      answer.version = version;
      return answer;
    }, refused);
  };
}
