/**
 * The conditional-request rules as tables (RFC 9110 §13.1.1, §13.1.2; entity
 * tags §8.8.3): one row per header value, with the exact verdict. The service
 * answers a malformed value with 400 `invalid-header` before these run
 * (parseConditions()); the rules below say false for it, as the rows show.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { matchHolds, noneMatchHits, parseTagList } from '../../src/http/conditional.ts';

/**
 * `If-None-Match` as one rule over strings: the value parsed as the pipeline parses it, then compared. A
 * malformed value (which the pipeline answers with 400 before any comparison) is false here.
 */
function ifNoneMatch(header: string | null, etag: string): boolean {
  const list = parseTagList(header);
  return list !== null && list !== undefined && noneMatchHits(list, etag);
}

/** `If-Match` as one rule over strings; an absent header holds, a malformed one never does. */
function ifMatch(header: string | null, etag: string | undefined): boolean {
  const list = parseTagList(header);
  if (list === null) return true;
  if (list === undefined || etag === undefined) return false;
  return matchHolds(list, etag);
}

const CURRENT = '"v1"';

/** [name, If-None-Match, ifNoneMatch(header, CURRENT)]: true means 304. */
const NONE_MATCH: readonly (readonly [string, string | null, boolean])[] = [
  ['absent', null, false],
  ['the same strong tag', '"v1"', true],
  ['the same tag, weak (weak comparison)', 'W/"v1"', true],
  ['another strong tag', '"v2"', false],
  ['another tag, weak', 'W/"v2"', false],
  ['opaque tags compare case-sensitively', '"V1"', false],
  ['the empty tag', '""', false],
  ['*: a current representation exists', '*', true],
  ['* with whitespace around', ' * ', true],
  ['a list holding the tag last', '"a", "v1"', true],
  ['a list holding the tag weak', 'W/"a", W/"v1"', true],
  ['a list without the tag', '"a", W/"b"', false],
  ['a list without spaces', '"a","v1"', true],
  ['whitespace and tabs around the elements', ' \t"a" ,\t"v1"\t', true],
  ['empty list elements are ignored (§5.6.1)', ',"v1",,', true],
  ['malformed: empty', '', false],
  ['malformed: only commas', ' , ,', false],
  ['malformed: unquoted', 'v1', false],
  ['malformed: lower-case w/', 'w/"v1"', false],
  ['malformed: space after W/', 'W/ "v1"', false],
  ['malformed: unterminated quote', '"v1', false],
  ['malformed: a space inside the tag', '"v 1"', false],
  ['malformed: two tags without a comma', '"a" "v1"', false],
  ['malformed: * in a list', '*, "v1"', false],
  ['malformed: one bad element, even beside a match', '"v1", bad', false],
];

/** [name, If-Match, current tag (undefined: no current representation), ifMatch()]: true means the write goes on. */
const MATCH: readonly (readonly [string, string | null, string | undefined, boolean])[] = [
  ['absent, a representation exists', null, CURRENT, true],
  ['absent, none exists', null, undefined, true],
  ['the same strong tag', '"v1"', CURRENT, true],
  ['the same tag, weak (strong comparison)', 'W/"v1"', CURRENT, false],
  ['another strong tag', '"v2"', CURRENT, false],
  ['opaque tags compare case-sensitively', '"V1"', CURRENT, false],
  ['*: a representation exists', '*', CURRENT, true],
  ['*: none exists', '*', undefined, false],
  ['a tag: none exists', '"v1"', undefined, false],
  ['a list holding the tag', '"v0", "v1"', CURRENT, true],
  ['a list holding the tag only weak', 'W/"v1", "v2"', CURRENT, false],
  ['a list without the tag', '"v0", "v2"', CURRENT, false],
  ['whitespace and tabs around the elements', '\t"v0" , "v1" ', CURRENT, true],
  ['empty list elements are ignored (§5.6.1)', ',,"v1",', CURRENT, true],
  ['malformed: empty', '', CURRENT, false],
  ['malformed: only a comma', ',', CURRENT, false],
  ['malformed: unquoted', 'v1', CURRENT, false],
  ['malformed: lower-case w/', 'w/"v1"', CURRENT, false],
  ['malformed: * in a list', '*, "v1"', CURRENT, false],
  ['malformed: one bad element, even beside a match', '"v1", v2', CURRENT, false],
  ['malformed: none exists', 'v1', undefined, false],
];

for (const [name, header, expected] of NONE_MATCH) {
  test(`ifNoneMatch: ${name} (${JSON.stringify(header)}) → ${expected}`, () => {
    assert.strictEqual(ifNoneMatch(header, CURRENT), expected);
  });
}

for (const [name, header, current, expected] of MATCH) {
  test(`ifMatch: ${name} (${JSON.stringify(header)}, ${current}) → ${expected}`, () => {
    assert.strictEqual(ifMatch(header, current), expected);
  });
}

test('every malformed row is one parseTagList() refuses, so the service answers it with 400', () => {
  const rows = [...NONE_MATCH, ...MATCH].map((row) => [row[0], row[1]] as const);
  const malformed = rows.filter(([name]) => name.startsWith('malformed')).map(([, header]) => parseTagList(header));
  assert.deepStrictEqual(
    malformed,
    malformed.map(() => undefined),
  );
  const wellFormed = rows.filter(([name, header]) => !name.startsWith('malformed') && header !== null);
  assert.deepStrictEqual(
    wellFormed.filter(([, header]) => parseTagList(header) === undefined),
    [],
  );
});
