/**
 * What each problem type of contract §5 means, when the service answers with it
 * and what the client should do: the one source of the pages at
 * `GET /problems/<slug>` (HTML, Markdown and JSON are all rendered from it,
 * src/pages/problems.ts). The titles are those of the problem bodies
 * (`PROBLEM_TITLES`). Written from contract §3–§11 and from the code that raises
 * each slug (`new HttpError(status, 'slug'`); test/api/problem-pages.test.ts
 * fails when a slug the code can emit has no text here, or is raised with a
 * status its text does not list.
 *
 * Strings are plain text in which `…` marks a code span, as in Markdown.
 *
 * The texts are kept by family, one file each: the request's form
 * (request-texts.ts), routing and negotiation (routing-texts.ts), access and
 * the rate limit (access-texts.ts), orders and payments (order-texts.ts),
 * and retries (retry-texts.ts); problem-text.ts holds their shape.
 */
import type { ProblemSlug } from '../http/problem.ts';
import { ACCESS_TEXTS } from './access-texts.ts';
import { ORDER_TEXTS } from './order-texts.ts';
import type { ProblemText } from './problem-text.ts';
import { REQUEST_TEXTS } from './request-texts.ts';
import { RETRY_TEXTS } from './retry-texts.ts';
import { ROUTING_TEXTS } from './routing-texts.ts';

/** Every problem type's text, by slug: a slug without one does not compile. */
export const PROBLEM_TEXTS: { readonly [S in ProblemSlug]: ProblemText } = {
  ...REQUEST_TEXTS,
  ...ROUTING_TEXTS,
  ...ACCESS_TEXTS,
  ...ORDER_TEXTS,
  ...RETRY_TEXTS,
};
