/**
 * Overload (contract §14): a request's database work takes a turn (src/http/admission.ts), after its body is read,
 * so that a slow client holds none; a request refused one is answered 503 with Retry-After at once, none of its
 * statements sent. Health, readiness and metrics (`overload: 'exempt'`) never need one.
 */
import type { Admission } from '../../http/admission.ts';
import type { HttpMetrics } from '../../metrics/http-metrics.ts';
import { overloaded } from './overload.ts';
import { pass, type Next, type Stage } from '../compose.ts';
import { routeOf, type Exchange } from '../exchange.ts';

export function admission(gate: Admission | undefined, metrics: HttpMetrics): Stage<Exchange> {
  if (gate === undefined) return pass();
  const held = async (x: Exchange, next: Next<Exchange>): Promise<Response> => {
    try {
      return await next(x);
    } finally {
      gate.release();
    }
  };
  return (x, next) => {
    if (routeOf(x).overload === 'exempt') return next(x);
    if (!gate.acquire()) {
      metrics.shed('turns');
      return Promise.reject(overloaded);
    }
    return held(x, next);
  };
}
