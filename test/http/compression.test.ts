/**
 * The content-coding rules (src/http/compression.ts), without a server:
 * `Accept-Encoding` with q-values, the types worth coding, the tag of each
 * coding and what matches it, and that the coded bytes decode to the same.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import {
  codedTag,
  encode,
  encoded,
  isCompressible,
  markStatic,
  negotiateCoding,
  tagMatches,
} from '../../src/http/compression.ts';
import { matchHolds, noneMatchHits, parseTagList, type TagList } from '../../src/http/conditional.ts';

describe('negotiateCoding', () => {
  const cases: [string | null, 'gzip' | 'br' | undefined][] = [
    [null, undefined],
    ['', undefined],
    ['gzip', 'gzip'],
    ['br', 'br'],
    ['gzip, deflate, br', 'br'],
    ['gzip, deflate', 'gzip'],
    ['deflate', undefined],
    ['identity', undefined],
    ['x-gzip', 'gzip'],
    ['GZIP', 'gzip'],
    ['br;q=0.5, gzip', 'gzip'],
    ['br;q=0.5, gzip;q=0.4', 'br'],
    ['br;Q=0.5, gzip;q=0.6', 'gzip'],
    ['gzip;q=1.000, br;q=0.999', 'gzip'],
    ['br;q=0, gzip;q=0', undefined],
    ['*', 'br'],
    ['*;q=0', undefined],
    ['*;q=0.1, gzip', 'gzip'],
    ['*;q=0.5, br;q=0', 'gzip'],
    ['gzip;q=0.5, identity', undefined],
    ['gzip;q=0.5, identity;q=0.5', 'gzip'],
    ['gzip, identity;q=0', 'gzip'],
    // Malformed elements are ignored, the rest still counts.
    ['br;q=2, gzip', 'gzip'],
    ['br;q=0.5000, gzip;q=0.1', 'gzip'],
    ['br;q=abc', undefined],
    ['br;level=1', undefined],
    ['br;q=0.5;q=0.9, gzip;q=0.1', 'gzip'],
    ['b r, gzip', 'gzip'],
    [' , ,gzip , ', 'gzip'],
    ['gzip ; q=0.5 , br ; q=0.4', 'gzip'],
  ];
  for (const [field, expected] of cases) {
    it(`${JSON.stringify(field)} → ${expected ?? 'identity'}`, () => {
      assert.equal(negotiateCoding(field), expected);
    });
  }

  it('reads a field of 100,000 commas in linear time (no regular expression over the whole field)', () => {
    assert.equal(negotiateCoding(`${','.repeat(100_000)}gzip`), 'gzip');
  });
});

describe('isCompressible', () => {
  for (const type of [
    'application/json',
    'application/problem+json',
    'application/vnd.orders.v2+json',
    'text/html; charset=utf-8',
    'text/markdown; charset=utf-8',
    'text/plain; version=0.0.4; charset=utf-8',
    'text/css; charset=utf-8',
    'text/javascript; charset=utf-8',
    'application/javascript',
    'image/svg+xml',
    'Application/JSON',
  ])
    it(`${type}: yes`, () => assert.equal(isCompressible(type), true));
  for (const type of [null, 'image/png', 'font/woff2', 'application/octet-stream', 'application/gzip'])
    it(`${type}: no`, () => assert.equal(isCompressible(type), false));
});

describe('entity tags of codings', () => {
  it('appends the coding inside the quotes', () => {
    assert.equal(codedTag('"abc"', 'gzip'), '"abc-gzip"');
    assert.equal(codedTag('"abc"', 'br'), '"abc-br"');
    assert.equal(codedTag('W/"abc"', 'br'), 'W/"abc-br"');
  });

  it('matches the identity tag and each coding of it, nothing else', () => {
    assert.equal(tagMatches('"abc"', '"abc"'), true);
    assert.equal(tagMatches('"abc-gzip"', '"abc"'), true);
    assert.equal(tagMatches('"abc-br"', '"abc"'), true);
    assert.equal(tagMatches('"abc-deflate"', '"abc"'), false);
    assert.equal(tagMatches('"abcd"', '"abc"'), false);
    assert.equal(tagMatches('"ab"', '"abc"'), false);
    assert.equal(tagMatches('"abc-gzip-gzip"', '"abc"'), false);
    assert.equal(tagMatches('"abc"', '"abc-gzip"'), false);
  });

  it('If-None-Match and If-Match accept a coded tag of the current representation', () => {
    const list = parseTagList('"other", "r5-gzip"') as TagList;
    assert.equal(noneMatchHits(list, '"r5"'), true);
    assert.equal(matchHolds(list, '"r5"'), true);
    assert.equal(noneMatchHits(list, '"r6"'), false);
    assert.equal(matchHolds(list, '"r6"'), false);
    // If-Match compares strongly: a weak coded tag never matches.
    assert.equal(matchHolds(parseTagList('W/"r5-br"') as TagList, '"r5"'), false);
    assert.equal(noneMatchHits(parseTagList('W/"r5-br"') as TagList, '"r5"'), true);
  });
});

describe('coding bytes', () => {
  const text = Buffer.from(JSON.stringify(Array.from({ length: 200 }, (_, i) => ({ id: i, status: 'pending' }))));

  it('gzip and br decode to the same bytes, and are smaller', () => {
    const gzipped = encode(text, 'gzip');
    const brotli = encode(text, 'br');
    assert.deepEqual(gunzipSync(gzipped), text);
    assert.deepEqual(brotliDecompressSync(brotli), text);
    assert.ok(gzipped.byteLength < text.byteLength / 4, `gzip: ${gzipped.byteLength} of ${text.byteLength}`);
    assert.ok(brotli.byteLength < text.byteLength / 4, `br: ${brotli.byteLength} of ${text.byteLength}`);
  });

  it('codes static bytes once: every request gets the same bytes', async () => {
    const bytes = markStatic(Buffer.from(text));
    const first = encoded(bytes, 'br');
    assert.ok(first instanceof Promise);
    assert.equal(encoded(bytes, 'br'), first);
    assert.deepEqual(brotliDecompressSync(await first), text);
    assert.deepEqual(gunzipSync(await encoded(bytes, 'gzip')), text);
  });

  it('codes dynamic bytes at once, without the thread pool', () => {
    const result = encoded(Buffer.from(text), 'gzip');
    assert.ok(result instanceof Uint8Array);
    assert.deepEqual(gunzipSync(result), text);
  });
});
