/**
 * The fields every answer of a route carries, errors included (contract §8): `Vary` by `Accept` where it
 * negotiates and `Authorization` where it authenticates, and version 1's deprecation fields on any answer in
 * version 1 (the negotiated one, else the path's prefix).
 */
import { varyWith } from '../../http/cors.ts';
import { fieldsOf } from '../../http/response.ts';
import type { VersionPolicy } from '../../http/semantics.ts';
import type { Answer } from '../answer.ts';
import type { Stage } from '../compose.ts';
import type { Exchange } from '../exchange.ts';

export function representationFields(versions: VersionPolicy): Stage<Exchange, Answer> {
  const decorated = (x: Exchange, answer: Answer): Answer => {
    const headers = fieldsOf(answer.response);
    const { route } = x;
    if (route !== undefined) {
      const vary = VARY[route.versioned === false ? 0 : 1][route.auth === 'public' ? 0 : 1] as readonly string[];
      // Added to what the handler's answer varies by already, never in its place.
      if (vary.length > 0) headers.set('vary', varyWith(headers.get('vary'), vary));
    }
    if ((answer.version ?? x.match.version) === 1) versions.decorate(headers, x.pathname);
    return answer;
  };
  // Not an async function: a request waiting inward holds a callback here, not a suspended frame.
  return (x, next) => next(x).then((answer) => decorated(x, answer));
}

/** What an answer varies by, by [versioned?][authenticated?]: the same lists each time (varyWith() remembers them). */
const VARY = [
  [[], ['Authorization']],
  [['Accept'], ['Accept', 'Authorization']],
] as const;
