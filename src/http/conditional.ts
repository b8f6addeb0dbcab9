/** Entity tags and conditional requests (contract §9; RFC 9110 §8.8.3, §13). Pure. */
import { createHash } from 'node:crypto';
import { tagMatches } from './compression.ts';
import { HttpError } from './problem.ts';

/** A strong ETag of the exact bytes of a representation, so that v1 and v2 of one resource have different tags. */
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

/** An `If-Match` or `If-None-Match` value parsed; `null` when absent, `undefined` when malformed (400). */
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
 * `If-None-Match` (RFC 9110 §13.1.2): whether `current` matches, by weak comparison (`W/"x"` matches `"x"`), a tag
 * of its representation in a content coding (`"x-gzip"`) included.
 */
export function noneMatchHits(list: TagList, current: string): boolean {
  if (list === '*') return true;
  return list.some((tag) => tagMatches(tag.opaque, current));
}

/**
 * `If-Match` (RFC 9110 §13.1.1): whether the precondition holds, by strong comparison (a weak tag never matches);
 * a tag in a content coding, as a client that read it gzip-coded names it, matches too.
 */
export function matchHolds(list: TagList, current: string): boolean {
  if (list === '*') return true;
  return list.some((tag) => !tag.weak && tagMatches(tag.opaque, current));
}

/** A request's conditions, each field parsed once, by the pipeline, before any handler runs. */
export interface Conditions {
  /** `If-None-Match` of a GET or HEAD; `null` when absent, or on another method. */
  readonly ifNoneMatch: TagList | null;
  /** `If-Match` of a write whose route checks it (an order's PUT, PATCH, DELETE); `null` when absent or not. */
  readonly ifMatch: TagList | null;
}

/** No condition: what a request without either field has. */
export const NO_CONDITIONS: Conditions = { ifNoneMatch: null, ifMatch: null };

/** Both fields parsed (`null`: absent, or not evaluated here); a malformed one is 400 `invalid-header`. */
export function parseConditions(ifNoneMatch: string | null, ifMatch: string | null): Conditions {
  if (ifNoneMatch === null && ifMatch === null) return NO_CONDITIONS;
  const noneMatch = parseTagList(ifNoneMatch);
  if (noneMatch === undefined) {
    throw new HttpError(400, 'invalid-header', {
      detail: 'If-None-Match must be * or a list of entity tags such as "abc", W/"abc".',
    });
  }
  const match = parseTagList(ifMatch);
  if (match === undefined) {
    throw new HttpError(400, 'invalid-header', {
      detail: 'If-Match must be * or a list of entity tags such as "abc".',
    });
  }
  return { ifNoneMatch: noneMatch, ifMatch: match };
}
