import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { etagOf, matchHolds, noneMatchHits, parseTagList } from '../../src/http/conditional.ts';

describe('etagOf()', () => {
  it('is a strong tag of the SHA-256 of the bytes', () => {
    assert.equal(etagOf(new TextEncoder().encode('{}')), '"RBNvo1WzZ4oRRq0W9-hknpT7T8If536DEMBg9hyq_4o"');
  });
  it('differs when one byte does', () => {
    assert.notEqual(etagOf(new TextEncoder().encode('{"a":1}')), etagOf(new TextEncoder().encode('{"a":2}')));
  });
});

describe('parseTagList()', () => {
  it('reads *, one tag, weak tags and lists', () => {
    assert.equal(parseTagList('*'), '*');
    assert.deepEqual(parseTagList('"a"'), [{ weak: false, opaque: '"a"' }]);
    assert.deepEqual(parseTagList('W/"a", "b" ,,"c"'), [
      { weak: true, opaque: '"a"' },
      { weak: false, opaque: '"b"' },
      { weak: false, opaque: '"c"' },
    ]);
    assert.deepEqual(parseTagList('""'), [{ weak: false, opaque: '""' }]);
  });
  it('is null when absent', () => {
    assert.equal(parseTagList(null), null);
  });
  for (const bad of ['a', '"a', 'a"', 'w/"a"', '"a" "b"', '*, "a"', '"a"b"', '', ',', 'W/ "a"']) {
    it(`is undefined for the malformed ${JSON.stringify(bad)}`, () => {
      assert.equal(parseTagList(bad), undefined);
    });
  }
});

describe('noneMatchHits() (weak comparison)', () => {
  const current = '"v1"';
  it('when the list holds the tag, strong or weak, is true', () => {
    assert.equal(noneMatchHits(parseTagList('"x", "v1"') as never, current), true);
    assert.equal(noneMatchHits(parseTagList('W/"v1"') as never, current), true);
    assert.equal(noneMatchHits('*', current), true);
  });
  it('when it does not, is false', () => {
    assert.equal(noneMatchHits(parseTagList('"v2", W/"v3"') as never, current), false);
  });
});

describe('matchHolds() (strong comparison)', () => {
  const current = '"v1"';
  it('holds for the same strong tag, or *', () => {
    assert.equal(matchHolds(parseTagList('"v0", "v1"') as never, current), true);
    assert.equal(matchHolds('*', current), true);
  });
  it('never holds for a weak tag', () => {
    assert.equal(matchHolds(parseTagList('W/"v1"') as never, current), false);
  });
  it('fails for another tag', () => {
    assert.equal(matchHolds(parseTagList('"v2"') as never, current), false);
  });
});
