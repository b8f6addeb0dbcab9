/**
 * Overload (contract §14): a request's database work takes a turn (src/http/admission.ts), after its body is read,
 * so that a slow client holds none; a request refused one is answered 503 with Retry-After at once, none of its
 * statements sent. Health, readiness and metrics (`overload: 'exempt'`) never need one.
 */
import type { Admission } from '../../http/admission.ts';
import type { HttpMetrics } from '../../metrics/http-metrics.ts';
import { overloaded } from './overload.ts';
import { pass, type Stage } from '../compose.ts';
import { routeOf, type Exchange } from '../exchange.ts';

export function admission(gate: Admission | undefined, metrics: HttpMetrics): Stage<Exchange> {
  if (gate === undefined) return pass();
  // The turn given back however the work ends: two functions made once, no async frame per request.
  const served = (response: Response) => {
    gate.release();
    return response;
  };
  const failed = (error: unknown): never => {
    gate.release();
    throw error;
  };
  return (x, next) => {
    if (routeOf(x).overload === 'exempt') return next(x);
    if (!gate.acquire()) {
      metrics.shed('turns');
      return Promise.reject(overloaded);
    }
    let work: Promise<Response>;
    try {
      work = next(x);
    } catch (error) {
      return failed(error);
    }
    return work.then(served, failed);
  };
}
