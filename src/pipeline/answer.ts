/**
 * What a stage hands outward: the answer, and the decisions of inner stages that an outer one reports. An outer
 * stage reads them here, never from the exchange; an error carries them on its way out (`Unwinding`), so that
 * the problems stage answers it with them.
 */
import type { Principal } from '../auth/authenticator.ts';
import type { Version } from '../http/negotiation.ts';
import type { RateDecision } from '../http/rate-limit.ts';

/** The decisions an outer stage reports, each added on the way out by the one stage that makes it. */
export interface Decisions {
  /** authorize: the user's or the address's rate decision (the `RateLimit` fields). */
  rate?: RateDecision;
  /** authorize (the log line). */
  principal?: Principal;
  /** negotiate: the version of the answer (version 1's deprecation fields). */
  version?: Version;
  /** problems: the client went away before its body arrived; it reads no answer. */
  aborted?: true;
}

export interface Answer extends Decisions {
  response: Response;
}

/** An error on its way out, with the stages' decisions. Not an `Error`: no stack to capture per refusal in a flood. */
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
