/**
 * The database deadline and the body (contract §11). A request waits at most `deadlineMs` for the database in all,
 * then gets 503; the clock is raced where it waits (authorize, the work stage), so a late request unwinds through
 * the stages it passed, with their decisions. The body stage sits inside routing, authentication and the rate
 * limit, so no body is read before its request is allowed; the clock stands still while it is read.
 */
import type { Logger } from '../../base/logger.ts';
import { DeadlineExceeded, OUTCOME_KNOWN, OutcomeUnknown, startDeadline } from '../../db/errors.ts';
import type { BodyBudget } from '../../http/body-budget.ts';
import {
  type BodyLimits as ReadLimits,
  type BodySource,
  declaredLength,
  type ReadBody,
  readBody,
} from '../../http/body.ts';
import { bodySourceOf } from '../../http/incoming-request.ts';
import { addressGroup } from '../../http/rate-limit.ts';
import type { Answer } from '../answer.ts';
import { attempt, type Next, type Stage } from '../compose.ts';
import type { Exchange } from '../exchange.ts';

export function databaseDeadline(deadlineMs: number, log: Logger): Stage<Exchange, Answer> {
  /**
   * contract §17: giving up (the clock ran out, the client left) cancels what the request has under way; a write
   * that may have been done all the same is answered as such, and its outcome logged once known.
   */
  const giveUp = (x: Exchange) => {
    const outcome = x.scope.abandon();
    if (outcome === 'unknown' && x.scope.resolved === undefined)
      x.scope.resolved = (resolution) => log.info(OUTCOME_KNOWN, { requestId: x.requestId, resolution });
    return outcome;
  };
  // Not an async function: a request waiting inward holds callbacks here, not a suspended frame.
  return (x, next) => {
    const clock = startDeadline(deadlineMs, () =>
      giveUp(x) === 'unknown' ? new OutcomeUnknown() : new DeadlineExceeded(deadlineMs),
    );
    x.client.gone?.(() => giveUp(x));
    x.deadline = clock;
    return attempt(next, x).then(
      (settled) => {
        clock.settle();
        return settled;
      },
      (error: unknown) => {
        clock.settle();
        throw error;
      },
    );
  };
}

/** `promise`, raced against the request's clock when it has one. */
export function withinDeadline<T>(x: Exchange, promise: Promise<T>): Promise<T> {
  return x.deadline === undefined ? promise : x.deadline.race(promise);
}

/** The innermost stage of the answers: the body and database stages, raced against the request's clock. */
export function work(inner: (x: Exchange) => Promise<Response>): Stage<Exchange, Answer> {
  // Not an async function: a request waiting for the database holds no suspended frame here.
  return (x) => withinDeadline(x, attempt(inner, x)).then(answered);
}
const answered = (response: Response): Answer => ({ response });

export interface BodyLimits {
  readonly maxBodyBytes: number;
  readonly bodyTimeoutMs: number;
  /** What every body being read or handled at once may hold (`BODY_BUDGET_BYTES`), and one client. */
  readonly budget: BodyBudget;
  /** The body's pace (`FIRST_BYTE_MS`…, src/http/body.ts); tests shorten it. */
  readonly pace?: ReadLimits['pace'];
}

/** The body stage; the body's share of the budget is given back once the request is answered. */
export function requestBody({ maxBodyBytes, bodyTimeoutMs, budget, pace }: BodyLimits): Stage<Exchange> {
  const base = { maxBytes: maxBodyBytes, timeoutMs: bodyTimeoutMs, budget, ...(pace === undefined ? {} : { pace }) };
  // Not an async function: a request without a body (every GET) passes through without a promise of its own.
  return (x, next) => {
    const source = bodySourceOf(x.request);
    return source === null ? next(x) : withBody(x, next, source, base);
  };
}

/** Whose share of the budget a body takes: its principal's, or (none) its address group's. */
function ownerOf(x: Exchange): string {
  return x.principal === undefined ? `address ${addressGroup(x.address)}` : `user ${x.principal.userId}`;
}

async function withBody(
  x: Exchange,
  next: Next<Exchange>,
  source: BodySource,
  base: Omit<ReadLimits, 'owner'>,
): Promise<Response> {
  const limits: ReadLimits = { ...base, owner: ownerOf(x) };
  const declared = declaredLength(x.header('content-length'), limits);
  x.deadline?.pause();
  let body: ReadBody;
  try {
    body = await readBody(source, declared, limits);
  } finally {
    x.deadline?.resume();
  }
  x.body = body.bytes;
  try {
    return await next(x);
  } finally {
    body.release();
  }
}
