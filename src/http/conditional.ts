/**
 * Entity tags and conditional requests (contract §9; RFC 9110 §8.8.3, §13). Pure.
 */
import { createHash } from 'node:crypto';

/**
 * A strong ETag for the exact bytes of a representation: so v1 and v2 of
 * one resource, whose bytes differ, have different tags.
 *
 * @example
 * etagOf(new TextEncoder().encode('{}')) // '"RBNvo1WzZ4oRRq0W9-hknpT7T8If536DEMBg9hyq_4o"'
 */
export function etagOf(bytes: Uint8Array): string {
  return `"${createHash('sha256').update(bytes).digest('base64url')}"`;
}

export interface EntityTag {
  readonly weak: boolean;
  /** The opaque tag with its quotes, e.g. `"abc"`. */
  readonly opaque: string;
}

/** `*`, or a list of entity tags; `undefined` when the value is malformed. */
export type TagList = '*' | readonly EntityTag[];

// RFC 9110 §8.8.3: entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE, etagc = %x21 / %x23-7E / obs-text.
const ENTITY_TAG = /^(W\/)?("[\x21\x23-\x7e\x80-\xff]*")$/;

/**
 * Parses an `If-Match` or `If-None-Match` value (exactly what `headers.get()`
 * returns): `*` or a comma-separated list of tags. `null` when absent,
 * `undefined` when malformed, so the caller can answer 400.
 */
export function parseTagList(value: string | null): TagList | null | undefined {
  if (value === null) return null;
  const trimmed = value.trim();
  if (trimmed === '*') return '*';
  const tags: EntityTag[] = [];
  for (const part of trimmed.split(',')) {
    const item = part.trim();
    if (item === '') continue; // RFC 9110 §5.6.1: empty list elements are ignored.
    const match = ENTITY_TAG.exec(item);
    if (!match) return undefined;
    tags.push({ weak: match[1] !== undefined, opaque: match[2] as string });
  }
  return tags.length === 0 ? undefined : tags;
}

/**
 * `If-None-Match` (RFC 9110 §13.1.2): true when `current` matches, so a GET
 * or HEAD is answered 304. Weak comparison: `W/"x"` matches `"x"`.
 */
export function noneMatchHits(list: TagList, current: string): boolean {
  if (list === '*') return true;
  return list.some((tag) => tag.opaque === current);
}

/**
 * `If-Match` (RFC 9110 §13.1.1): true when the precondition holds. Strong
 * comparison: a weak tag never matches. `*` matches any current representation.
 */
export function matchHolds(list: TagList, current: string): boolean {
  if (list === '*') return true;
  return list.some((tag) => !tag.weak && tag.opaque === current);
}

/**
 * `If-None-Match` as one rule (RFC 9110 §13.1.2): true when `header` (exactly
 * what `headers.get('if-none-match')` returns) matches `etag`, the current
 * representation's strong tag with its quotes, so a GET or HEAD is answered
 * 304. Weak comparison (RFC 9110 §8.8.3.2): `W/"x"` matches `"x"`; `*`
 * matches, since a current representation exists.
 *
 * An absent header is false, and so is a malformed one: this function cannot
 * say 400. The service answers a malformed `If-None-Match` with 400
 * `invalid-header` (`finish()` in semantics.ts), so a caller that needs that
 * checks `parseTagList(header) === undefined` first.
 *
 * @example
 * ifNoneMatch('"a", W/"b"', '"b"') // true
 * ifNoneMatch('"a"', '"b"')        // false
 * ifNoneMatch(null, '"b"')         // false
 */
export function ifNoneMatch(header: string | null, etag: string): boolean {
  const list = parseTagList(header);
  return list !== null && list !== undefined && noneMatchHits(list, etag);
}

/**
 * `If-Match` as one rule (RFC 9110 §13.1.1): true when the precondition
 * holds for `header` (exactly what `headers.get('if-match')` returns) and
 * `etag`, the current representation's strong tag with its quotes, or
 * `undefined` when there is none. Strong comparison (RFC 9110 §8.8.3.2): a
 * weak tag never matches. `*` holds when a current representation exists; an
 * absent header always holds.
 *
 * A malformed value does not hold (false), so it never lets a write through.
 * The service answers it with 400 `invalid-header`, not 412: a caller that
 * needs that checks `parseTagList(header) === undefined` first.
 *
 * @example
 * ifMatch('"a", "b"', '"b"') // true
 * ifMatch('W/"b"', '"b"')    // false
 * ifMatch('*', undefined)    // false
 * ifMatch(null, undefined)   // true
 */
export function ifMatch(header: string | null, etag: string | undefined): boolean {
  const list = parseTagList(header);
  if (list === null) return true;
  if (list === undefined || etag === undefined) return false;
  return matchHolds(list, etag);
}
