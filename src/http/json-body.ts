/**
 * Request bodies as JSON (contract §4, §5, §8): the media type checked (415), the bytes parsed (400
 * `malformed-json`, nesting past the limit included) and the value validated with valibot (422 `validation`).
 */
import * as v from 'valibot';
import { distinctErrors, HttpError, listedErrors, type ProblemError } from './problem.ts';
import type { Version } from './negotiation.ts';
import { MAX_JSON_DEPTH, scanJson, type JsonShape } from './json-scan.ts';
import { jsonPointer } from './json-pointer.ts';

export const MERGE_PATCH_TYPE = 'application/merge-patch+json';
/** The `Accept-Patch` value of PATCH routes (RFC 5789 §3.1). */
export const ACCEPT_PATCH = `application/json, ${MERGE_PATCH_TYPE}`;
/** contract §8: plain JSON and the two vendor types; PATCH also takes a merge patch (RFC 7396). */
const BODY_TYPES = new Set(['application/json', 'application/vnd.orders.v1+json', 'application/vnd.orders.v2+json']);

export interface BodyOptions {
  /** PATCH: accepts the merge-patch type too, and a 415 names it in `Accept-Patch` (RFC 5789 §3.1). */
  readonly patch?: boolean;
  /** The version served: a vendor type of the other version is refused (contract §8: the placements must agree). */
  readonly version?: Version;
}

/**
 * A request body is taken in the identity coding only (contract §4, RFC 7694 §3): any other `Content-Encoding` is
 * 415 with `Accept-Encoding: identity`, before the body is looked at, so a coded body is never run as plain.
 */
export function checkContentEncoding(contentEncoding: string | null): void {
  if (contentEncoding === null) return;
  const codings = contentEncoding.split(',').map((coding) => coding.trim().toLowerCase());
  if (codings.every((coding) => coding === 'identity' || coding === '')) return;
  throw new HttpError(415, 'unsupported-media-type', {
    detail:
      `Request bodies are taken in the identity coding only; this one is sent with Content-Encoding ` +
      `${contentEncoding.length > 64 ? `${contentEncoding.slice(0, 64)}…` : contentEncoding}. Send it uncompressed.`,
    headers: { 'accept-encoding': 'identity' },
  });
}

/** Checks for a JSON media type with no `charset` but UTF-8 (RFC 8259 §8.1); else 415. */
export function checkJsonContentType(contentType: string | null, options: BodyOptions = {}): void {
  const [type = '', ...parameters] = (contentType ?? '').split(';').map((part) => part.trim());
  const media = type.toLowerCase();
  const accepted = BODY_TYPES.has(media) || (options.patch === true && media === MERGE_PATCH_TYPE);
  // Blanks around "=" dropped by split and trim: a regular expression such as /\s*=\s*/ is quadratic in a run of them.
  const charset = parameters
    .map((p) => {
      const equals = p.indexOf('=');
      return equals === -1
        ? p.toLowerCase()
        : `${p.slice(0, equals).trim()}=${p.slice(equals + 1).trim()}`.toLowerCase();
    })
    .find((p) => p.startsWith('charset='));
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
 * Parses `body` as UTF-8 JSON, or throws 400 `malformed-json` (also for nesting past `MAX_JSON_DEPTH`, checked on
 * the text first); well-formed JSON that holds too much to walk is 422 `validation`.
 */
export function parseJson(body: Uint8Array): unknown {
  const read = jsonText(body);
  if (read === null) throw new HttpError(400, 'malformed-json', { detail: 'The request body is not valid UTF-8.' });
  const { text, shape } = read;
  if (text.trim() === '')
    throw new HttpError(400, 'malformed-json', { detail: 'The request body is empty; a JSON value is expected.' });
  if (shape.depth > MAX_JSON_DEPTH) {
    throw new HttpError(400, 'malformed-json', {
      detail:
        `The request body is nested deeper than ${MAX_JSON_DEPTH} levels of arrays and objects, the most this ` +
        'service accepts.',
    });
  }
  // Sizes before syntax (contract §11): a body both too big to walk and malformed further on is this 422.
  if (shape.oversize !== undefined) throw validationError([shape.oversize]);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new HttpError(400, 'malformed-json', {
      detail: `The request body is not valid JSON: ${(error as Error).message}.`,
    });
  }
}

/** A request body as text, and its shape (`scanJson`). */
export interface JsonText {
  readonly text: string;
  readonly shape: JsonShape;
}

/** Each body's text and shape, made once: a keyed POST's fingerprint and its handler both read them. */
const texts = new WeakMap<Uint8Array, JsonText | null>();

/** `body` as UTF-8 text with its shape, made once per body; `null` when it is not UTF-8. */
export function jsonText(body: Uint8Array): JsonText | null {
  let read = texts.get(body);
  if (read === undefined) {
    let text: string | undefined;
    try {
      text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(body);
    } catch {
      text = undefined;
    }
    read = text === undefined ? null : { text, shape: scanJson(text) };
    texts.set(body, read);
  }
  return read;
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
  // Each member's pipe stops at its first problem: a size declared before a format (a string's maxLength
  // before its e-mail pattern) keeps the format's check off a value too long to be one.
  const result = v.safeParse(schema, value, { abortEarly: false, abortPipeEarly: true });
  if (result.success) return result.output;
  throw validationError(result.issues.map(toProblemError));
}

/** 422 `validation` with these errors; the detail names the places of those a problem lists. */
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
