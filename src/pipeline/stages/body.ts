/**
 * The body, then the database deadline (contract §11): the body is read
 * first, whatever the route, so its limit holds everywhere (413, 408); from
 * then on the request waits at most `deadlineMs` for the database, in all,
 * and gets 503 past it (the problems stage says so).
 */
import { withDeadline } from '../../db/errors.ts';
import { readBody } from '../../http/body.ts';
import type { Stage } from '../compose.ts';
import type { Exchange } from '../exchange.ts';

export interface BodyLimits {
  readonly maxBodyBytes: number;
  /** Time a client gets to send its whole body. */
  readonly bodyTimeoutMs: number;
  /** How long the request may then wait for the database, in all. */
  readonly deadlineMs: number;
}

export function bodyAndDeadline({ maxBodyBytes, bodyTimeoutMs, deadlineMs }: BodyLimits): Stage<Exchange> {
  return async (x, next) => {
    const { body } = x.request;
    if (body !== null) x.body = await readBody(body, x.header('content-length'), maxBodyBytes, bodyTimeoutMs);
    return withDeadline(next(x), deadlineMs);
  };
}
