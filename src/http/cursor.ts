/**
 * The `cursor` of a collection's next page (contract §4): the keyset position
 * of the last row sent and the number of the page it leads to, bound by a
 * fingerprint to the collection, its filters and its order, and signed with
 * the service's cursor key (an HMAC; every process shares the key through the
 * database). Made here, and taken back only if it is one this service made,
 * unchanged, for the same query, each value of its key's type: nothing of a
 * refused cursor reaches SQL. Pure.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { sortOrder, type KeyType, type SortKey } from './sort-order.ts';

/** The longest `cursor` taken: far above any this service makes (about 200 characters). */
export const MAX_CURSOR_LENGTH = 512;

/** What a cursor is bound to: the query's filters and sort. */
export interface CursorScope {
  readonly sort: readonly SortKey[];
  readonly filters: Readonly<Record<string, unknown>>;
}

const CURSOR_VERSION = 2;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
/** The bytes of the HMAC-SHA256 a cursor keeps: 128 bits, beyond any forging by trial. */
const SIGNATURE_BYTES = 16;

/** The signature of a cursor's payload (its base64url text) under `key`. */
function signature(key: Uint8Array, payload: string): Buffer {
  return createHmac('sha256', key).update(`orders-cursor.${payload}`).digest().subarray(0, SIGNATURE_BYTES);
}

/**
 * The fingerprint of what a cursor is made for: the collection, its filters
 * (as parsed, by name) and its order. 96 bits of SHA-256: it tells a
 * cursor used with another query from its own, and is no secret.
 */
function fingerprint(collection: string, scope: CursorScope): string {
  const order = sortOrder(scope.sort).map((k) => `${k.descending ? '-' : ''}${k.key}`);
  const filters = Object.entries(scope.filters)
    .filter(([, value]) => value !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash('sha256')
    .update(JSON.stringify([collection, order, filters]))
    .digest('base64url')
    .slice(0, 16);
}

/**
 * The `cursor` of page `page`, the page after the row whose keyset position is `values` (its value of each key
 * of `sortOrder()`, as the database gives them as text): base64url of
 * `{"v":2,"f":<fingerprint>,"k":[values],"p":page}`, a dot, and base64url of its signature under `key`.
 *
 * @example
 * encodeCursor(key, '/orders', { sort: [], filters: {} }, ['42'], 3) // 'eyJ2IjoyLCJmIjoi….Xb2…'
 */
export function encodeCursor(
  key: Uint8Array,
  collection: string,
  scope: CursorScope,
  values: readonly string[],
  page: number,
): string {
  const payload = { v: CURSOR_VERSION, f: fingerprint(collection, scope), k: values, p: page };
  const text = Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url');
  return `${text}.${signature(key, text).toString('base64url')}`;
}

/** Where a cursor leads: after the keyset position `values`, to page number `page`. */
export interface CursorPosition {
  readonly values: readonly string[];
  readonly page: number;
}

/**
 * The position `text` leads to, if it is a cursor this service made (signed under `key`, unchanged) for
 * `collection` with these filters and this sort, each value of the type of its key; else why not. Nothing of a
 * refused cursor reaches SQL.
 */
export function decodeCursor(
  key: Uint8Array,
  text: string,
  collection: string,
  scope: CursorScope,
  types: Readonly<Record<string, KeyType>>,
): CursorPosition | { readonly error: string } {
  const malformed = { error: "is not a cursor of this collection; pass the next link's cursor exactly as given" };
  if (text.length > MAX_CURSOR_LENGTH) return malformed;
  const [payloadText, signed, ...rest] = text.split('.');
  if (payloadText === undefined || signed === undefined || rest.length > 0) return malformed;
  if (!BASE64URL.test(payloadText) || !BASE64URL.test(signed)) return malformed;
  const given = Buffer.from(signed, 'base64url');
  // One text per cursor: a cursor whose parts re-encode otherwise was not made here.
  if (given.length !== SIGNATURE_BYTES || given.toString('base64url') !== signed) return malformed;
  // Signed by this service (in constant time: the time taken says nothing of the signature), before anything
  // of the payload is read.
  if (!timingSafeEqual(given, signature(key, payloadText))) return malformed;
  const bytes = Buffer.from(payloadText, 'base64url');
  if (bytes.toString('base64url') !== payloadText) return malformed;
  let payload: unknown;
  try {
    payload = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (error) {
    // Not UTF-8 (TypeError from the decoder), or not JSON (SyntaxError).
    if (error instanceof TypeError || error instanceof SyntaxError) return malformed;
    throw error;
  }
  if (!isCursorPayload(payload)) return malformed;
  if (payload.f !== fingerprint(collection, scope))
    return { error: 'was made for other filters or another sort; keep those of the link that gave it' };
  const keys = sortOrder(scope.sort);
  if (payload.k.length !== keys.length) return malformed;
  for (const [i, key] of keys.entries()) {
    const type = types[key.key];
    if (type === undefined || !validValue(type, payload.k[i] as string)) return malformed;
  }
  return { values: payload.k, page: payload.p };
}

function isCursorPayload(value: unknown): value is { v: number; f: string; k: string[]; p: number } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const { v, f, k, p, ...rest } = value as Record<string, unknown>;
  return (
    Object.keys(rest).length === 0 &&
    v === CURSOR_VERSION &&
    typeof f === 'string' &&
    Array.isArray(k) &&
    k.every((x) => typeof x === 'string') &&
    Number.isSafeInteger(p) &&
    (p as number) >= 2
  );
}

const BIGINT = /^[1-9][0-9]{0,18}$/;
const NUMERIC = /^-?[0-9]{1,20}(\.[0-9]{1,20})?$/;
/** As sql/queries/*.sql write a timestamp for a cursor: UTC, microseconds, the database's exact value. */
const TIMESTAMP = /^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})\.[0-9]{6}Z$/;
const MAX_BIGINT = 2n ** 63n - 1n;
const MAX_TEXT_LENGTH = 256;

/** Whether PostgreSQL takes `value` as a value of `type`: a value it would refuse is a 400 here, never a 500. */
function validValue(type: KeyType, value: string): boolean {
  switch (type) {
    case 'bigint':
      return BIGINT.test(value) && BigInt(value) <= MAX_BIGINT;
    case 'numeric':
      return NUMERIC.test(value);
    case 'text':
      // PostgreSQL's text holds no U+0000, and UTF-8 no lone surrogate.
      return value.length <= MAX_TEXT_LENGTH && !value.includes('\u0000') && !/\p{Cs}/u.test(value);
    case 'timestamptz':
      return validTimestamp(value);
  }
}

function validTimestamp(value: string): boolean {
  const match = TIMESTAMP.exec(value);
  if (match === null) return false;
  const [year, month, day, hour, minute, second] = match.slice(1).map(Number) as number[] as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
  return year >= 1 && days !== undefined && day >= 1 && day <= days && hour <= 23 && minute <= 59 && second <= 59;
}
