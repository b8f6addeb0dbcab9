/** The shape of a problem type's text (texts.ts), and the sentences several texts share. */
import type { ProblemSlug } from '../http/problem.ts';

export interface ProblemText {
  /** The statuses the service answers with this type. */
  readonly statuses: readonly number[];
  /** What the problem means. */
  readonly meaning: string;
  /** The situations in which the service answers with it. */
  readonly when: readonly string[];
  /** What the client should do about it. */
  readonly whatToDo: readonly string[];
}

/** Texts of some problem types, by slug: one family of them (request-texts.ts, order-texts.ts…). */
export type ProblemTexts = { readonly [S in ProblemSlug]?: ProblemText };

/** The two ways a refusal relates to an `Idempotency-Key`, said the same way on every page. */
export const STORED_UNDER_KEY =
  'If the request carried an `Idempotency-Key`, this answer is stored under it: repeating the request with that ' +
  'key replays it, so a changed request needs a new key.';
export const NOT_STORED_UNDER_KEY =
  'This answer is not stored under an `Idempotency-Key`: a corrected request may reuse the same key.';
