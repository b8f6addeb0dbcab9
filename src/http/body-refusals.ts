/** The answers a request body is refused with (contract §11), each with a detail that says what to do. */
import type { BodyBudget } from './body-budget.ts';
import { HttpError } from './problem.ts';

/** 408: the body came too slowly (`why`). */
export function tooSlow(why: string): HttpError {
  return new HttpError(408, 'request-timeout', {
    detail: `The request body came too slowly: ${why}.`,
    headers: { connection: 'close' },
  });
}

/** 408: the body did not come in time; what is left of it is not read. */
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

/** 429: this client's bodies in flight hold its whole share of the budget; nothing was done. */
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
