/**
 * Idempotency-Key rules (contract §7; draft-ietf-httpapi-idempotency-key-header
 * §2: the value is an RFC 8941 sf-string) as tables, from
 * src/http/idempotency-key.ts:
 * - absent: no key (the route decides whether one is required);
 * - a bare key: 1–255 characters of visible ASCII (%x21-7E), taken as it is;
 * - an sf-string (RFC 8941 §3.3.3: printable ASCII %x20-7E, with \" and \\
 *   the only escapes), unescaped, whose content must itself be such a key;
 * - a value opening with a quote must be a whole sf-string.
 * Anything else is 400 `invalid-header` with one fixed detail.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isStored, MAX_KEY_LENGTH, parseIdempotencyKey, type KeyParse } from '../../src/http/idempotency-key.ts';

const INVALID: KeyParse = {
  ok: false,
  detail: 'Idempotency-Key must be 1 to 255 visible ASCII characters, bare or as a quoted string.',
};
const key = (value: string): KeyParse => ({ ok: true, key: value });

/** [name, Idempotency-Key (as headers.get() returns it), parseIdempotencyKey()]. */
const KEYS: readonly (readonly [string, string | null, KeyParse])[] = [
  ['absent', null, { ok: true, key: undefined }],
  ['a UUID', '4c1d7a9e-6f0b-4b8e-9a55-3c2f1e0d9b7a', key('4c1d7a9e-6f0b-4b8e-9a55-3c2f1e0d9b7a')],
  ['one character', 'a', key('a')],
  ['punctuation of visible ASCII', "!#$%&'()*+,-./:;<=>?@[]^_`{|}~", key("!#$%&'()*+,-./:;<=>?@[]^_`{|}~")],
  ['* is a bare key, not a wildcard', '*', key('*')],
  ['a comma is part of the key, not a list', 'a,b', key('a,b')],
  ['an sf-binary form is a bare key, not decoded', ':YWJj:', key(':YWJj:')],
  ['a quote inside a bare key is kept', 'a"b', key('a"b')],
  ['a quote ending a bare key is kept', 'abc"', key('abc"')],
  ['255 characters bare', 'k'.repeat(255), key('k'.repeat(255))],
  ['256 characters bare', 'k'.repeat(256), INVALID],
  ['empty', '', INVALID],
  ['a space inside', 'a b', INVALID],
  ['a tab', '\t', INVALID],
  ['DEL (%x7F)', 'a\x7fb', INVALID],
  ['non-ASCII', 'clé', INVALID],
  ['an sf-string', '"abc"', key('abc')],
  ['an sf-string with \\" unescaped', '"a\\"b"', key('a"b')],
  ['an sf-string with \\\\ unescaped', '"a\\\\b"', key('a\\b')],
  ['an sf-string of 255 characters', `"${'k'.repeat(255)}"`, key('k'.repeat(255))],
  ['an sf-string of 256 characters', `"${'k'.repeat(256)}"`, INVALID],
  ['an escaped quote counts once toward 255', `"${'k'.repeat(254)}\\""`, key(`${'k'.repeat(254)}"`)],
  ['an empty sf-string', '""', INVALID],
  ['an sf-string with a space (valid sf-string, not a valid key)', '"a b"', INVALID],
  ['an sf-string with an escape other than \\" and \\\\', '"a\\nb"', INVALID],
  ['an sf-string with an unescaped quote inside', '"a"b"', INVALID],
  ['an unterminated sf-string', '"abc', INVALID],
  ['a lone quote', '"', INVALID],
  ['an sf-string followed by more', '"abc";p=1', INVALID],
];

/** [HTTP status, isStored()]: contract §7, results of requests that executed. */
const STATUSES: readonly (readonly [number, boolean])[] = [
  [100, false],
  [199, false],
  [200, true],
  [201, true],
  [202, true],
  [204, true],
  [299, true],
  [300, false],
  [303, false],
  [304, false],
  [400, false],
  [401, false],
  [403, false],
  [404, false],
  [405, false],
  [406, false],
  [409, true],
  [410, false],
  [412, false],
  [413, false],
  [415, false],
  [422, true],
  [428, false],
  [429, false],
  [500, false],
  [502, false],
  [503, false],
  [504, false],
];

test('MAX_KEY_LENGTH is 255', () => {
  assert.strictEqual(MAX_KEY_LENGTH, 255);
});

for (const [name, value, expected] of KEYS) {
  const shown = value === null ? 'null' : JSON.stringify(value.length > 40 ? `${value.slice(0, 20)}…` : value);
  test(`parseIdempotencyKey: ${name} (${shown})`, () => {
    assert.deepStrictEqual(parseIdempotencyKey(value), expected);
  });
}

for (const [status, expected] of STATUSES) {
  test(`isStored(${status}) → ${expected}`, () => {
    assert.strictEqual(isStored(status), expected);
  });
}
