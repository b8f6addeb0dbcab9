/**
 * What a stage hands outward (contract §10, §13, §8): the answer, and the
 * decisions of the stages it passed that an outer stage reports: the rate
 * decision (the address limit's `RateLimit` fields), the principal (the log
 * line), the negotiated version (version 1's deprecation fields), and a
 * client gone before its body arrived (the log line and the metrics). Each
 * decision has one stage that makes it (authorize, negotiate, problems); an
 * outer stage reads it here, never from the exchange, so nothing an inner
 * stage wrote reaches an outer one beside what it returned.
 *
 * An error thrown inside carries the decisions of the stages it passed on
 * its way out (`Unwinding`), so that the problems stage answers it with them.
 */
import type { Principal } from '../auth/authenticator.ts';
import type { Version } from '../http/negotiation.ts';
import type { RateDecision } from '../http/rate-limit.ts';

/**
 * The decisions an outer stage reports. The stage that makes one adds it to the answer its inner stages
 * returned, on the way out (one object per request, made by the innermost answering stage).
 */
export interface Decisions {
  /** authorize: the decision of the user's or the address's limit. */
  rate?: RateDecision;
  /** authorize. */
  principal?: Principal;
  /** negotiate: the version the answer is in. */
  version?: Version;
  /** problems: the client went away before its body arrived; it reads no answer. */
  aborted?: true;
}

export interface Answer extends Decisions {
  response: Response;
}

/**
 * An error on its way out through stages that decided something: the error, and what they decided. Not an
 * `Error` itself (no stack to capture on every refusal under a flood): only the problems stage catches it, and
 * takes the error out.
 */
export class Unwinding {
  constructor(
    readonly error: unknown,
    readonly decisions: Decisions,
  ) {}
}

/** `error` with `decisions` added to those it carries already (each is made by one stage: none is replaced). */
export function unwinding(error: unknown, decisions: Decisions): Unwinding {
  return error instanceof Unwinding
    ? new Unwinding(error.error, { ...decisions, ...error.decisions })
    : new Unwinding(error, decisions);
}

/** The error inside `thrown`, and the decisions it carries. */
export function unwound(thrown: unknown): { error: unknown; decisions: Decisions } {
  return thrown instanceof Unwinding ? thrown : { error: thrown, decisions: {} };
}
