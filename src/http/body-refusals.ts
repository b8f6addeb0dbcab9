/**
 * The answers a request body is refused with (contract §11; src/http/body.ts reads it): each an `HttpError`
 * whose detail says what to do, and `Connection: close` where the rest of the body is not read.
 */
import type { BodyBudget } from './body-budget.ts';
import { HttpError } from './problem.ts';

/** 408, and the connection closed: the body came too slowly (`why`). */
export function tooSlow(why: string): HttpError {
  return new HttpError(408, 'request-timeout', {
    detail: `The request body came too slowly: ${why}.`,
    headers: { connection: 'close' },
  });
}

/** 408, and the connection closed: what is left of the body is not read. */
export function timedOut(ms: number): HttpError {
  return new HttpError(408, 'request-timeout', {
    detail: `The request body was not received within ${ms / 1000} s.`,
    headers: { connection: 'close' },
  });
}

export function tooLarge(maxBytes: number): HttpError {
  return new HttpError(413, 'payload-too-large', { detail: `The request body must not exceed ${maxBytes} bytes.` });
}

/** 413: `pieces` for `size` bytes, where `free` pieces and one more per `perBytes` bytes are read. */
export function tooFragmented(pieces: number, size: number, free: number, perBytes: number): HttpError {
  return new HttpError(413, 'payload-too-large', {
    detail:
      `The request body came in ${pieces} pieces for ${size} bytes; at most ${free} pieces and one more ` +
      `per ${perBytes} bytes are read. Send it in fewer, larger writes or chunks.`,
    headers: { connection: 'close' },
  });
}

/**
 * 429 with `Retry-After`: this client's bodies in flight hold its whole share of the budget (contract §11: one
 * client never fills it for the others); nothing was done.
 */
export function overShare(budget: BodyBudget): HttpError {
  return new HttpError(429, 'rate-limited', {
    detail:
      `Your request bodies being read hold your share of what the service reads at once (${budget.share} bytes); ` +
      'nothing was done. Finish or close those first, then try again.',
    headers: { 'retry-after': '1', connection: 'close' },
  });
}

/** 503 with `Retry-After`: the bodies in flight hold the whole budget; a keyed retry is safe. */
export function overBudget(budget: BodyBudget): HttpError {
  return new HttpError(503, 'unavailable', {
    detail:
      `The service is reading as many request bodies as it holds at once (${budget.limit} bytes in all); ` +
      'nothing was done. Try again shortly.',
    headers: { 'retry-after': '1', connection: 'close' },
  });
}
