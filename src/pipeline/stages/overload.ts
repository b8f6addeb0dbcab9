/**
 * Overload (contract §14), decided before the route, authentication or body cost anything (inside the fields stage, so
 * a refusal carries `Vary` and version 1's fields as any answer does): while the event loop is saturated
 * (src/http/loop-watch.ts), a request is refused (503 `unavailable`, `Retry-After: 1`) if its client sent at least
 * its share of the requests of the last second or two: as many as the average client address (an IPv6 /64, as the
 * rate limits count) that sent any, whatever became of them (refusals load the loop too). A flood from one client is
 * refused while a client with a request now and then among it is served (contract §11: one client never takes the
 * process from the others); under a load spread over many clients, each sends about the average and any may be
 * refused. A request whose client has already gone is not served at all (its
 * log line says `aborted`). Health, readiness and metrics (`overload: 'exempt'`) are always served.
 */
import type { LoopWatch } from '../../http/loop-watch.ts';
import { HttpError, problemResponse } from '../../http/problem.ts';
import { addressGroup } from '../../http/rate-limit.ts';
import { bufferedResponse } from '../../http/response.ts';
import type { HttpMetrics } from '../../metrics/http-metrics.ts';
import type { Answer } from '../answer.ts';
import { pass, type Stage } from '../compose.ts';
import type { Exchange } from '../exchange.ts';

/** The refusal, made once: a refusal in a flood costs no stack trace of its own. */
export const overloaded = new HttpError(503, 'unavailable', {
  detail: 'The service is at capacity; try again shortly.',
  headers: { 'retry-after': '1' },
});

/** How long a client's requests count towards its share: this window and the one before. */
export const SHARE_WINDOW_MS = 1_000;

export function shedding(watch: LoopWatch | undefined, metrics: HttpMetrics): Stage<Exchange, Answer> {
  if (watch === undefined) return pass();
  // The requests that arrived, by client address group, in this window and the last.
  let current = new Map<string, number>();
  let previous = new Map<string, number>();
  let currentTotal = 0;
  let previousTotal = 0;
  let windowStart = performance.now();
  return (x, next) => {
    if (x.route?.overload === 'exempt') return next(x);
    if (x.client.departed?.() === true)
      return Promise.resolve({
        aborted: true,
        response: bufferedResponse(null, { status: 400, headers: { connection: 'close' } }),
      });
    if (x.started - windowStart >= SHARE_WINDOW_MS) {
      // The window before is the last second's only if this one followed it; after a quiet spell, nothing.
      const stale = x.started - windowStart >= 2 * SHARE_WINDOW_MS;
      previous = stale ? new Map() : current;
      previousTotal = stale ? 0 : currentTotal;
      current = new Map();
      currentTotal = 0;
      windowStart = x.started;
    }
    const group = addressGroup(x.address);
    const count = (current.get(group) ?? 0) + 1;
    current.set(group, count);
    currentTotal += 1;
    if (!watch.saturated()) return next(x);
    // This client's requests against the average of the clients that sent any.
    const mine = count + (previous.get(group) ?? 0);
    if (mine * Math.max(current.size, previous.size) < currentTotal + previousTotal) return next(x);
    metrics.shed('loop');
    return Promise.resolve({ response: problemResponse(overloaded, x.path, x.requestId) });
  };
}
