/**
 * Request bodies as JSON (contract §4, §5, §8): the media type is checked (415),
 * the bytes parsed (400 `malformed-json`, also for nesting past the limit of
 * contract §11) and the value validated against a valibot schema (422
 * `validation`, with a JSON Pointer per error).
 */
import * as v from 'valibot';
import { distinctErrors, HttpError, listedErrors, type ProblemError } from './problem.ts';
import type { Version } from './negotiation.ts';

export const MERGE_PATCH_TYPE = 'application/merge-patch+json';
/** The `Accept-Patch` value of PATCH routes (RFC 5789 §3.1). */
export const ACCEPT_PATCH = `application/json, ${MERGE_PATCH_TYPE}`;
/** contract §8: plain JSON and the two vendor types; PATCH also takes a merge patch (RFC 7396). */
const BODY_TYPES = new Set(['application/json', 'application/vnd.orders.v1+json', 'application/vnd.orders.v2+json']);

export interface BodyOptions {
  /** PATCH: accepts the merge-patch type too, and a 415 names it in `Accept-Patch` (RFC 5789 §3.1). */
  readonly patch?: boolean;
  /**
   * The version the request is served in: a vendor type of the other version is refused (contract §8: placements must
   * agree).
   */
  readonly version?: Version;
}

/**
 * Checks `contentType` (exactly what `headers.get('content-type')` returns):
 * a JSON media type, with no `charset` other than UTF-8 (RFC 8259 §8.1).
 */
export function checkJsonContentType(contentType: string | null, options: BodyOptions = {}): void {
  const [type = '', ...parameters] = (contentType ?? '').split(';').map((part) => part.trim());
  const media = type.toLowerCase();
  const accepted = BODY_TYPES.has(media) || (options.patch === true && media === MERGE_PATCH_TYPE);
  const charset = parameters.map((p) => p.toLowerCase().replace(/\s*=\s*/, '=')).find((p) => p.startsWith('charset='));
  const utf8 = charset === undefined || ['charset=utf-8', 'charset="utf-8"', 'charset=utf8'].includes(charset);
  const vendor = /^application\/vnd\.orders\.v([12])\+json$/.exec(media);
  if (accepted && utf8 && vendor !== null && options.version !== undefined && Number(vendor[1]) !== options.version) {
    throw new HttpError(415, 'unsupported-media-type', {
      detail:
        `Content-Type ${type} is a version ${vendor[1]} body, but the request is served in version ` +
        `${options.version}.`,
      ...(options.patch ? { headers: { 'accept-patch': ACCEPT_PATCH } } : {}),
    });
  }
  if (accepted && utf8) return;
  const expected = options.patch ? `application/json or ${MERGE_PATCH_TYPE}` : 'application/json';
  throw new HttpError(415, 'unsupported-media-type', {
    detail:
      contentType === null
        ? `The request body needs Content-Type: ${expected}.`
        : accepted
          ? 'JSON bodies must be UTF-8.'
          : `Content-Type ${type} is not supported here; send ${expected}.`,
    ...(options.patch ? { headers: { 'accept-patch': ACCEPT_PATCH } } : {}),
  });
}

/**
 * contract §11: the deepest nesting of arrays and objects a body may have. Every
 * walk over a parsed body (validation, the idempotency fingerprint) recurses,
 * so the limit is what keeps them far from the end of the stack.
 */
export const MAX_JSON_DEPTH = 32;

/**
 * Parses `body` as UTF-8 JSON, or throws 400 `malformed-json`: also when
 * arrays and objects nest deeper than `MAX_JSON_DEPTH`, checked on the text
 * before anything walks the value.
 */
export function parseJson(body: Uint8Array): unknown {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(body);
  } catch {
    throw new HttpError(400, 'malformed-json', { detail: 'The request body is not valid UTF-8.' });
  }
  if (text.trim() === '')
    throw new HttpError(400, 'malformed-json', { detail: 'The request body is empty; a JSON value is expected.' });
  if (jsonNesting(text) > MAX_JSON_DEPTH) {
    throw new HttpError(400, 'malformed-json', {
      detail:
        `The request body is nested deeper than ${MAX_JSON_DEPTH} levels of arrays and objects, the most this ` +
        'service accepts.',
    });
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new HttpError(400, 'malformed-json', {
      detail: `The request body is not valid JSON: ${(error as Error).message}.`,
    });
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN = new Set([0x5b, 0x7b]); // [ {
const CLOSE = new Set([0x5d, 0x7d]); // ] }

/**
 * The deepest nesting of arrays and objects in the JSON text `text`, found in
 * one pass without recursion (so any depth is safe to measure); brackets
 * inside strings, escaped quotes included, do not count. On text that is not
 * JSON the number means little, but JSON.parse refuses that text anyway.
 *
 * @example
 * jsonNesting('{"a":[1,"]]"]}') // 2
 */
export function jsonNesting(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH)
        i += 1; // the escaped character, a quote or a backslash included, is not syntax
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (OPEN.has(c)) {
      depth += 1;
      if (depth > deepest) deepest = depth;
    } else if (CLOSE.has(c) && depth > 0) {
      depth -= 1;
    }
  }
  return deepest;
}

/** Validates `value` against `schema`, or throws 422 `validation` listing every problem. */
export function validate<S extends v.GenericSchema>(schema: S, value: unknown): v.InferOutput<S> {
  // valibot's object schemas take an array for an object (`[]` would be an empty merge patch).
  if (OBJECT_SCHEMAS.has(schema.type) && !isJsonObject(value)) {
    throw new HttpError(422, 'validation', {
      detail: `The request body must be a JSON object, not ${kindOf(value)}.`,
      errors: [{ pointer: '', detail: `must be a JSON object, not ${kindOf(value)}` }],
    });
  }
  const unstorable = unstorableStrings(value, []);
  if (unstorable.length > 0) throw validationError(unstorable);
  const result = v.safeParse(schema, value, { abortEarly: false });
  if (result.success) return result.output;
  throw validationError(result.issues.map(toProblemError));
}

/** 422 `validation` with these errors; the detail names the places of those a problem lists (contract §11). */
export function validationError(errors: readonly ProblemError[]): HttpError {
  const distinct = distinctErrors(errors);
  const pointers = [
    ...new Set(listedErrors(distinct).listed.map((e) => ('pointer' in e ? e.pointer || '/' : e.parameter))),
  ];
  return new HttpError(422, 'validation', {
    detail: `The request body is invalid at ${pointers.join(', ')}.`,
    errors: distinct,
  });
}

const OBJECT_SCHEMAS = new Set(['object', 'strict_object', 'loose_object', 'object_with_rest']);

function isJsonObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** What a JSON value is, for a detail: "an array", "a number", "null". */
function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

// U+0000 (PostgreSQL text cannot hold it) and UTF-16 halves without their pair.
// biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 is what it looks for (PostgreSQL text refuses it)
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Strings (member names included) that no database column could store as sent. */
function unstorableStrings(value: unknown, path: (string | number)[]): ProblemError[] {
  if (typeof value === 'string') {
    return UNSTORABLE.test(value)
      ? [{ pointer: jsonPointer(path), detail: 'must not contain U+0000 or an unpaired surrogate' }]
      : [];
  }
  if (Array.isArray(value)) return value.flatMap((item, i) => unstorableStrings(item, [...path, i]));
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).flatMap(([key, item]) =>
      UNSTORABLE.test(key)
        ? [{ pointer: jsonPointer([...path, key]), detail: 'is a member name with U+0000 or an unpaired surrogate' }]
        : unstorableStrings(item, [...path, key]),
    );
  }
  return [];
}

/** RFC 6901: the pointer to `path`, with `~` and `/` escaped. */
export function jsonPointer(path: readonly (string | number)[]): string {
  return path.map((key) => `/${String(key).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

function toProblemError(issue: v.BaseIssue<unknown>): ProblemError {
  const path = (issue.path ?? []).map((item) => item.key as string | number);
  if (OBJECT_SCHEMAS.has(issue.type)) {
    if (issue.expected === 'Object')
      return { pointer: jsonPointer(path), detail: `must be a JSON object, not ${kindOf(issue.input)}` };
    // A member missing or unknown: the last step of the path is the member, its input the would-be object.
    // An array there is one error at the array, not one per member it lacks.
    if (Array.isArray(issue.path?.at(-1)?.input))
      return { pointer: jsonPointer(path.slice(0, -1)), detail: 'must be a JSON object, not an array' };
  }
  if (issue.type === 'strict_object' && issue.expected === 'never') {
    return { pointer: jsonPointer(path), detail: 'is not a member of this body' };
  }
  if ((issue.type === 'strict_object' || issue.type === 'object') && issue.received === 'undefined') {
    return { pointer: jsonPointer(path), detail: 'is required' };
  }
  return { pointer: jsonPointer(path), detail: issue.message };
}
