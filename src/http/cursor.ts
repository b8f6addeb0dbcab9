/**
 * The `cursor` of a collection's next page (contract §4): the keyset position of the last row sent and the number
 * of the page it leads to, bound by a fingerprint to the collection, its filters, order and page size and the
 * client, and sealed with AES-256-GCM under the cursor key (shared by every process through the database; the
 * previous key still opens one). Taken back only if this service made it, unchanged, for the same query and
 * client, each value of its key's type: nothing of a refused cursor reaches SQL. Pure.
 */
import { createCipheriv, createDecipheriv, createHash, createHmac } from 'node:crypto';
import { sortOrder, type KeyType, type SortKey } from './sort-order.ts';

/** The longest `cursor` taken: far above any this service makes (about 200 characters). */
export const MAX_CURSOR_LENGTH = 512;

/** What a cursor is bound to: the query's filters, sort and page size, and the client it was given to. */
export interface CursorScope {
  readonly sort: readonly SortKey[];
  readonly filters: Readonly<Record<string, unknown>>;
  readonly pageSize: number;
  /** Who it was given to: `user 7`, or `anyone` on a public collection. */
  readonly principal: string;
}

const CURSOR_VERSION = 3;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const IV_BYTES = 12;
/** GCM's tag: 128 bits, beyond any forging by trial. */
const TAG_BYTES = 16;
const AAD = Buffer.from('orders-cursor.v3');

/** The sealing key of cursor key `key`: the key itself signs nothing else, and is never used raw. */
function sealingKey(key: Uint8Array): Buffer {
  return createHmac('sha256', key).update('orders-cursor-seal').digest();
}

/**
 * A synthetic IV, derived from the payload: one page's `next` link is the same each time it is served (its ETag
 * with it), and an IV is never used again for another payload. It tells only that two cursors are the same.
 */
function syntheticIv(key: Uint8Array, payload: string): Buffer {
  const ivKey = createHmac('sha256', key).update('orders-cursor-iv').digest();
  return createHmac('sha256', ivKey).update(payload).digest().subarray(0, IV_BYTES);
}

/** What a cursor is made for (collection, filters, order, page size, client), in 96 bits of SHA-256. */
function fingerprint(collection: string, scope: CursorScope): string {
  const order = sortOrder(scope.sort).map((k) => `${k.descending ? '-' : ''}${k.key}`);
  const filters = Object.entries(scope.filters)
    .filter(([, value]) => value !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash('sha256')
    .update(JSON.stringify([collection, order, filters, scope.pageSize, scope.principal]))
    .digest('base64url')
    .slice(0, 16);
}

/**
 * The `cursor` of page `page`, after the row whose keyset position is `values` (its value of each key of
 * `sortOrder()`, as text from the database); the same position gives the same cursor.
 */
export function encodeCursor(
  key: Uint8Array,
  collection: string,
  scope: CursorScope,
  values: readonly string[],
  page: number,
): string {
  const payload = { v: CURSOR_VERSION, f: fingerprint(collection, scope), k: values, p: page };
  const text = JSON.stringify(payload);
  const iv = syntheticIv(key, text);
  const cipher = createCipheriv('aes-256-gcm', sealingKey(key), iv).setAAD(AAD);
  const sealed = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString('base64url');
}

/** The payload `bytes` holds if one of `keys` sealed it; `undefined` if none did (or it was changed). */
function opened(keys: readonly Uint8Array[], bytes: Buffer): Buffer | undefined {
  const iv = bytes.subarray(0, IV_BYTES);
  const tag = bytes.subarray(bytes.length - TAG_BYTES);
  const sealed = bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES);
  for (const key of keys) {
    const decipher = createDecipheriv('aes-256-gcm', sealingKey(key), iv).setAAD(AAD).setAuthTag(tag);
    try {
      return Buffer.concat([decipher.update(sealed), decipher.final()]);
    } catch {
      // Not sealed under this key (or changed): the next key, if any.
    }
  }
  return undefined;
}

/** Where a cursor leads: after the keyset position `values`, to page number `page`. */
export interface CursorPosition {
  readonly values: readonly string[];
  readonly page: number;
}

/** Why a cursor was refused; `unopened`: none of the keys sealed it (one newer than these may have). */
export interface CursorRefusal {
  readonly error: string;
  readonly unopened?: true;
}

/** The position `text` leads to, if it is a cursor this service made for this query and client; else why not. */
export function decodeCursor(
  keys: readonly Uint8Array[],
  text: string,
  collection: string,
  scope: CursorScope,
  types: Readonly<Record<string, KeyType>>,
): CursorPosition | CursorRefusal {
  const malformed = { error: "is not a cursor of this collection; pass the next link's cursor exactly as given" };
  if (text.length > MAX_CURSOR_LENGTH || !BASE64URL.test(text)) return malformed;
  const bytes = Buffer.from(text, 'base64url');
  // One text per cursor: a cursor that re-encodes otherwise was not made here.
  if (bytes.length <= IV_BYTES + TAG_BYTES || bytes.toString('base64url') !== text) return malformed;
  // Sealed by this service, before anything of the payload is read.
  const payloadBytes = opened(keys, bytes);
  if (payloadBytes === undefined) return { ...malformed, unopened: true };
  let payload: unknown;
  try {
    payload = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payloadBytes));
  } catch (error) {
    // Not UTF-8 (TypeError from the decoder), or not JSON (SyntaxError).
    if (error instanceof TypeError || error instanceof SyntaxError) return malformed;
    throw error;
  }
  if (!isCursorPayload(payload)) return malformed;
  if (payload.f !== fingerprint(collection, scope))
    return {
      error:
        'was made for other filters, another sort or page size, or another client; keep those of the link that ' +
        'gave it',
    };
  const order = sortOrder(scope.sort);
  if (payload.k.length !== order.length) return malformed;
  for (const [i, sortKey] of order.entries()) {
    const type = types[sortKey.key];
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
