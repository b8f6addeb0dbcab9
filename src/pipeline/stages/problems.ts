/**
 * Every error thrown inside becomes an answer (contract §5; RFC 9457): an `HttpError` its problem response; a
 * database out of reach 503, a write of unknown outcome 503 `outcome-unknown`; any other error 500, logged
 * with its stack, never shown. A client gone before its body arrived reads no answer: its log line says so.
 */
import { errorFields, type Logger } from '../../base/logger.ts';
import { ClientAbortError } from '../../http/body.ts';
import { refusalOf } from '../../http/domain-problem.ts';
import {
  DatabaseUnreachable,
  isDatabaseUnavailable,
  OUTCOME_KNOWN,
  OutcomeUnknown,
  poolerHint,
} from '../../db/errors.ts';
import {
  type HttpError,
  internalError,
  outcomeUnknownError,
  problemResponse,
  unavailableError,
} from '../../http/problem.ts';
import { bufferedResponse } from '../../http/response.ts';
import { unwound, type Answer } from '../answer.ts';
import { attempt, type Stage } from '../compose.ts';
import type { Exchange } from '../exchange.ts';

export function problems(log: Logger): Stage<Exchange, Answer> {
  const answerTo = (x: Exchange, thrown: unknown): Answer => {
    const { error, decisions } = unwound(thrown);
    if (error instanceof ClientAbortError) {
      return {
        ...decisions,
        aborted: true,
        response: bufferedResponse(null, { status: 400, headers: { connection: 'close' } }),
      };
    }
    return { ...decisions, response: problemResponse(toHttpError(error, x, log), x.path, x.requestId) };
  };
  // Not an async function: a request waiting inward holds a callback here, not a suspended frame.
  return (x, next) => attempt(next, x).then(undefined, (thrown: unknown) => answerTo(x, thrown));
}

function toHttpError(error: unknown, x: Exchange, log: Logger): HttpError {
  const refusal = refusalOf(error);
  if (refusal !== undefined) return refusal;
  if (error instanceof OutcomeUnknown) {
    log.warn('database: a write was sent and not answered; its outcome is unknown', {
      requestId: x.requestId,
      ...errorFields(error.cause ?? error),
    });
    void error.later?.then((resolution) => log.info(OUTCOME_KNOWN, { requestId: x.requestId, resolution }));
    return outcomeUnknownError();
  }
  if (isDatabaseUnavailable(error)) {
    // A refusal of the open circuit sent nothing: the outage is logged once, where it opens and where it closes.
    if (!(error instanceof DatabaseUnreachable))
      log.warn('database unavailable', { requestId: x.requestId, ...errorFields(error) });
    return unavailableError();
  }
  // contract §17: a pooler's refusal is a configuration mistake the log names.
  const hint = poolerHint(error);
  log.error('unhandled error', {
    requestId: x.requestId,
    method: x.request.method,
    path: x.pathname,
    ...errorFields(error),
    ...(hint === undefined ? {} : { hint }),
  });
  return internalError();
}
