import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { negotiate, parseAccept } from '../../src/http/negotiation.ts';

const V1 = 'application/vnd.orders.v1+json';
const V2 = 'application/vnd.orders.v2+json';
const JSON_ = 'application/json';

describe('negotiate()', () => {
  describe('on a path without a version', () => {
    const cases: [string | null, 1 | 2, string][] = [
      [null, 1, JSON_],
      ['', 1, JSON_],
      ['*/*', 1, JSON_],
      ['application/*', 1, JSON_],
      ['application/json', 1, JSON_],
      [V1, 1, V1],
      [V2, 2, V2],
      [`${V2}, application/json;q=0.5`, 2, V2],
      [`application/json;q=0.9, ${V2}`, 2, V2],
      [`${V2};q=0.1, application/json`, 1, JSON_],
      [`${V1}, ${V2}`, 2, V2],
      [`application/json, ${V2}`, 1, JSON_],
      [`*/*;q=0.5, ${V2}`, 2, V2],
      [`text/html, ${V1};q=0.2`, 1, V1],
      [`APPLICATION/VND.ORDERS.V2+JSON`, 2, V2],
      [`${V2};q=0, */*`, 1, JSON_],
      ['application/json;q=0, */*', 2, V2],
      ['application/json; charset=utf-8', 1, JSON_],
    ];
    for (const [accept, version, contentType] of cases) {
      it(`serves ${JSON.stringify(accept)} as v${version} ${contentType}`, () => {
        assert.deepEqual(negotiate(accept, undefined), { ok: true, version, contentType });
      });
    }
  });

  describe('on a versioned path', () => {
    it('keeps the path version and answers in its vendor type when asked', () => {
      assert.deepEqual(negotiate(V2, 2), { ok: true, version: 2, contentType: V2 });
      assert.deepEqual(negotiate(null, 2), { ok: true, version: 2, contentType: JSON_ });
      assert.deepEqual(negotiate('*/*', 1), { ok: true, version: 1, contentType: JSON_ });
      assert.deepEqual(negotiate(`${V2}, ${V1};q=0.5`, 1), { ok: true, version: 1, contentType: V1 });
    });

    it('refuses an Accept that allows only the other version', () => {
      const result = negotiate(V2, 1);
      assert.equal(result.ok, false);
      assert.equal(
        !result.ok && result.detail,
        'Nothing in Accept can be produced here (the path asks for version 1); ' +
          `this resource is available as ${JSON_}, ${V1}.`,
      );
      assert.equal(negotiate(V1, 2).ok, false);
    });
  });

  describe('when nothing is acceptable', () => {
    for (const accept of [
      'text/html',
      'application/xml, text/*',
      '*/*;q=0',
      `application/json;q=0, ${V1};q=0, ${V2};q=0`,
    ]) {
      it(`refuses ${JSON.stringify(accept)}`, () => {
        assert.equal(negotiate(accept, undefined).ok, false);
      });
    }

    it('says so when Accept has no valid range at all', () => {
      const result = negotiate('garbage;;;, /json, */html', undefined);
      assert.equal(
        !result.ok && result.detail,
        `The Accept header has no valid media range; this resource is available as ${JSON_}, ${V2}, ${V1}.`,
      );
    });
  });
});

describe('parseAccept()', () => {
  it('skips malformed entries and keeps the rest', () => {
    assert.deepEqual(parseAccept('text/html;q=2, application/json;q=0.8, bad, */json, application/*;q=0.1234'), [
      { type: 'application', subtype: 'json', q: 0.8, specificity: 2, index: 1 },
    ]);
  });

  it('ranks specificity: */*, type/*, type/subtype, with parameters', () => {
    assert.deepEqual(
      parseAccept('*/*, text/*, text/plain, text/plain;format=flowed').map((r) => r.specificity),
      [0, 1, 2, 3],
    );
  });

  it('lets the most specific range decide each offer, even with a lower q', () => {
    // application/json gets 0.1 and v2 0.5 from their exact ranges; only v1 is left to application/* at 1.
    assert.deepEqual(negotiate(`application/*;q=1, application/json;q=0.1, ${V2};q=0.5`, undefined), {
      ok: true,
      version: 1,
      contentType: V1,
    });
    assert.deepEqual(negotiate(`application/*;q=0.2, application/json;q=0.1, ${V2};q=0.5`, undefined), {
      ok: true,
      version: 2,
      contentType: V2,
    });
  });
});

describe('negotiate(), asked again', () => {
  it('gives the same verdicts for the same values, past the number of verdicts it keeps, and for long values', () => {
    const long = `${'text/plain;q=0.1, '.repeat(40)}${V2}`;
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 600; i++) {
        const accept = i % 2 === 0 ? `${V2};ext=${i}` : `text/html;ext=${i}`;
        const expected = i % 2 === 0 ? { ok: true, version: 2, contentType: V2 } : negotiate('text/html', undefined);
        assert.deepEqual(negotiate(accept, undefined), expected, accept);
      }
      assert.deepEqual(negotiate(long, undefined), { ok: true, version: 2, contentType: V2 });
      assert.deepEqual(negotiate(V2, 1).ok, false);
      assert.deepEqual(negotiate(null, 2), { ok: true, version: 2, contentType: JSON_ });
      assert.deepEqual(negotiate('', 1), { ok: true, version: 1, contentType: JSON_ });
    }
  });
});
