/**
 * CORS (contract §16, Fetch §3.2): with `CORS_ORIGINS`, every answer varies by `Origin` (a shared cache must not
 * hand one origin's answer to another), a listed origin gets the CORS fields, and its preflight's 204 those of one.
 */
import { isPreflight, PREFLIGHT_VARY, preflightFields, responseFields, varyWith } from '../../http/cors.ts';
import { fieldsOf } from '../../http/response.ts';
import type { Answer } from '../answer.ts';
import { pass, type Stage } from '../compose.ts';
import type { Exchange } from '../exchange.ts';

/** `allowOrigin`: the listed origin a request's `Origin` names, or `undefined` (src/http/cors.ts). */
export function cors(
  allowOrigin: ((origin: string | null) => string | undefined) | undefined,
): Stage<Exchange, Answer> {
  if (allowOrigin === undefined) return pass();
  return async (x, next) => {
    const origin = allowOrigin(x.header('origin'));
    x.preflight =
      origin !== undefined && isPreflight(x.request.method, origin, x.header('access-control-request-method'));
    const answer = await next(x);
    const { response } = answer;
    const headers = fieldsOf(response);
    if (x.preflight && x.match.kind === 'options' && response.status === 204) {
      for (const [name, value] of preflightFields(origin as string, headers.get('allow') ?? '')) {
        headers.set(name, value);
      }
      headers.set('vary', varyWith(headers.get('vary'), PREFLIGHT_VARY));
    } else {
      if (origin !== undefined) for (const [name, value] of responseFields(origin)) headers.set(name, value);
      headers.set('vary', varyWith(headers.get('vary'), ORIGIN));
    }
    return answer;
  };
}

const ORIGIN = ['Origin'];
