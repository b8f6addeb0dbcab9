/**
 * The responses many operations share, in `components.responses` under a name made of what sets them apart
 * (`Problem409IdempotencyKeyInUseOrderNotPayableV1Replayable`, `NotModifiedV1`, `OptionsV1Patch`).
 */
import type { Version } from '../http/negotiation.ts';
import { PROBLEM_CONTENT_TYPE, PROBLEM_TITLES, type ProblemSlug } from '../http/problem.ts';
import { Problem } from './atoms.ts';
import type { Components } from './components.ts';
import {
  always,
  BEFORE_ROUTE,
  type Field,
  fields,
  pipelineFields,
  PREFLIGHT_FIELDS,
  PROBLEM_FIELDS,
  sometimes,
} from './response-fields.ts';

type Json = Record<string, unknown>;

/** What sets a route's problem responses apart, beyond their status and problem types. */
export interface ProblemFacts {
  readonly version: Version | undefined;
  /** Its answers are counted against the rate limit (all but the health checks'). */
  readonly limited: boolean;
  /** A PATCH, whose 415 names the media types it takes in Accept-Patch. */
  readonly patch: boolean;
  /** Stored under the request's Idempotency-Key and replayed as it was (contract §7). */
  readonly replayable: boolean;
}

/** `not-found` → `NotFound`. */
const pascal = (slug: string): string =>
  slug
    .split('-')
    .map((word) => (word[0] as string).toUpperCase() + word.slice(1))
    .join('');

/** The fields of `lists` (one per problem type), each `required` only when every list says so. */
function onEvery(lists: readonly Field[][]): Field[] {
  const names = [...new Set(lists.flat().map((field) => field.name))];
  return names.map((name) => ({
    name,
    required: lists.every((list) => list.some((field) => field.name === name && field.required)),
  }));
}

/** A `$ref` to the response of `status` whose problem types are `slugs`. */
export function problemResponse(
  status: number,
  slugs: readonly ProblemSlug[],
  facts: ProblemFacts,
  components: Components,
): Json {
  const perType = slugs.map((slug) => {
    // Refused before its route is found, a health check is counted like any request.
    const limited = facts.limited || BEFORE_ROUTE.has(slug);
    return [...pipelineFields(facts.version, limited), ...(PROBLEM_FIELDS[slug] ?? [])];
  });
  // Vary: Accept-Encoding on every answer with content (src/pipeline/stages/compression.ts).
  const list = [...always('X-Request-Id', 'Cache-Control'), ...onEvery(perType), ...always('Vary')];
  if (facts.patch && status === 415) list.push(...sometimes('Accept-Patch'));
  if (facts.replayable) list.push(...sometimes('Idempotent-Replayed'));
  list.push(...sometimes('Content-Encoding'));
  const has = (name: string) => list.some((field) => field.name === name);
  const suffixes = [
    has('Deprecation') ? 'V1' : '',
    has('RateLimit') ? '' : 'Unlimited',
    facts.replayable ? 'Replayable' : '',
    has('Accept-Patch') ? 'Patch' : '',
  ];
  const name = `Problem${status}${slugs.map(pascal).join('')}${suffixes.join('')}`;
  return components.ref('responses', name, {
    description: slugs.map((slug) => `\`/problems/${slug}\`: ${PROBLEM_TITLES[slug]}`).join('; '),
    headers: fields(list, components),
    content: { [PROBLEM_CONTENT_TYPE]: { schema: { $ref: `#/components/schemas/${Problem.name}` } } },
  });
}

/** A `$ref` to the 304 of a route in `version`: the 200's ETag, Cache-Control and Vary (RFC 9110 §15.4.5). */
export function notModifiedResponse(version: Version | undefined, limited: boolean, components: Components): Json {
  const list = [...always('ETag', 'Cache-Control'), ...pipelineFields(version, limited), ...always('Vary')];
  const name = `NotModified${version === 1 ? 'V1' : ''}${limited ? '' : 'Unlimited'}`;
  return components.ref('responses', name, {
    description: 'Not modified: If-None-Match names the current entity tag (of any content coding).',
    headers: fields(list, components),
  });
}

/** A `$ref` to the 204 of OPTIONS on a path in `version`, `patchable` when the path takes PATCH. */
export function optionsResponse(version: Version | undefined, patchable: boolean, components: Components): Json {
  const list = [
    ...always('Allow', ...(patchable ? ['Accept-Patch'] : [])),
    ...pipelineFields(version),
    ...PREFLIGHT_FIELDS,
  ];
  return components.ref('responses', `Options${version === 1 ? 'V1' : ''}${patchable ? 'Patch' : ''}`, {
    description: 'The methods of this path, in Allow.',
    headers: fields(list, components),
  });
}
