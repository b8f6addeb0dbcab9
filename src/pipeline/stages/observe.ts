/** The outermost stage (contract §13): the request id on every answer, one log line and the metrics per request. */
import type { Logger } from '../../base/logger.ts';
import { fieldsOf } from '../../http/response.ts';
import type { HttpMetrics } from '../../metrics/http-metrics.ts';
import type { Answer } from '../answer.ts';
import type { Stage } from '../compose.ts';
import type { Exchange } from '../exchange.ts';

export function observe(log: Logger, metrics: HttpMetrics): Stage<Exchange, Answer> {
  const observed = (x: Exchange, answer: Answer): Answer => {
    const { response, aborted = false } = answer;
    fieldsOf(response).set('x-request-id', x.requestId);
    const seconds = (performance.now() - x.started) / 1000;
    // One shape of object for every line (no spread), `aborted` set only on a request whose client went away.
    const line: RequestLine = {
      requestId: x.requestId,
      method: x.request.method,
      path: x.path,
      status: aborted ? null : response.status,
      durationMs: Math.round(seconds * 100_000) / 100,
      userId: answer.principal?.userId ?? null,
      clientAddress: x.address,
    };
    if (aborted) log.info('request', { ...line, aborted: true });
    else log.info('request', line);
    metrics.request(patternOf(x), x.request.method, aborted ? undefined : response.status, seconds);
    return answer;
  };
  // Not an async function: a request waiting inward holds a callback here, not a suspended frame (contract §14).
  return (x, next) => next(x).then((answer) => observed(x, answer));
}

type RequestLine = {
  requestId: string;
  method: string;
  path: string;
  status: number | null;
  durationMs: number;
  userId: number | null;
  clientAddress: string;
};

/** The route pattern a request is counted under: its route's, or its path's for 405 and OPTIONS; none for 404. */
function patternOf(x: Exchange): string | undefined {
  const { match } = x;
  return match.kind === 'not-found' ? undefined : match.pattern;
}
