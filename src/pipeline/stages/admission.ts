/**
 * Overload (contract §14): a request's database work waits its turn (src/http/admission.ts), after its body is
 * read, so that a slow client holds no turn; a request refused a turn is answered 503 with Retry-After at once.
 * Health, readiness and metrics (`overload: 'exempt'`) never wait.
 */
import type { Admission } from '../../http/admission.ts';
import { Overloaded } from '../../http/admission.ts';
import { HttpError } from '../../http/problem.ts';
import { pass, type Next, type Stage } from '../compose.ts';
import { routeOf, type Exchange } from '../exchange.ts';

export function admission(gate: Admission | undefined): Stage<Exchange> {
  if (gate === undefined) return pass();
  const held = async (x: Exchange, next: Next<Exchange>): Promise<Response> => {
    const started = performance.now();
    try {
      return await next(x);
    } finally {
      gate.release(performance.now() - started);
    }
  };
  const refused = (error: unknown): never => {
    if (!(error instanceof Overloaded)) throw error;
    throw new HttpError(503, 'unavailable', {
      detail: 'The service is at capacity; try again shortly.',
      headers: { 'retry-after': '1' },
    });
  };
  return (x, next) => {
    if (routeOf(x).overload === 'exempt') return next(x);
    const turn = gate.acquire();
    return turn === true ? held(x, next) : turn.then(() => held(x, next), refused);
  };
}
