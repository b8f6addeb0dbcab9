import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  generateToken,
  isWellFormedToken,
  parseAuthorization,
  parseScopes,
  parseTtl,
  tokenHash,
  tokenHashText,
  tokenKind,
} from '../../src/auth/tokens.ts';

describe('generateToken()', () => {
  const key = new Uint8Array(32).fill(7);

  it('is ord_, 24 random bytes and a 16-byte tag under the key, in base64url', () => {
    const token = generateToken(key);
    assert.match(token, /^ord_[A-Za-z0-9_-]{54}$/);
    assert.equal(Buffer.from(token.slice(4, 36), 'base64url').length, 24);
    assert.equal(Buffer.from(token.slice(36), 'base64url').length, 16);
    assert.ok(isWellFormedToken(token));
  });

  it('never repeats', () => {
    const tokens = new Set(Array.from({ length: 1000 }, () => generateToken(key)));
    assert.equal(tokens.size, 1000);
  });
});

describe('tokenKind() (contract §10: a guess cannot forge a tag)', () => {
  const key = new Uint8Array(32).fill(7);
  const other = new Uint8Array(32).fill(8);

  it('tells a token tagged under the key, one forged or tagged under another key, and one made before tags', () => {
    const token = generateToken(key);
    assert.equal(tokenKind(token, key), 'tagged');
    assert.equal(tokenKind(token, other), 'forged');
    assert.equal(tokenKind(`${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`, key), 'forged');
    assert.equal(tokenKind(`ord_${'a'.repeat(43)}`, key), 'untagged');
    assert.equal(tokenKind('ord_short', key), 'forged');
  });
});

describe('tokenHash()', () => {
  it('is the SHA-256 of the whole token', () => {
    // Known vector: sha256("abc").
    assert.equal(tokenHash('abc').toString('hex'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    assert.equal(tokenHash('ord_x').length, 32);
  });
});
describe('tokenHashText()', () => {
  it('is the digest in base64', () => {
    assert.equal(tokenHashText('abc'), 'ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=');
    assert.equal(tokenHashText('ord_x'), tokenHash('ord_x').toString('base64'));
  });
});

describe('parseAuthorization()', () => {
  const cases: [string | null, ReturnType<typeof parseAuthorization>][] = [
    [null, { kind: 'none' }],
    ['', { kind: 'none' }],
    ['Basic dXNlcjpwYXNz', { kind: 'none' }],
    ['Bearer ord_abc', { kind: 'bearer', token: 'ord_abc' }],
    ['bearer ord_abc', { kind: 'bearer', token: 'ord_abc' }],
    ['BEARER   ord_abc', { kind: 'bearer', token: 'ord_abc' }],
    ['Bearer', { kind: 'malformed' }],
    ['Bearer ', { kind: 'malformed' }],
    ['Bearer a b', { kind: 'malformed' }],
    ['Bearer ord_ä', { kind: 'malformed' }],
    ['Bearer,ord_abc', { kind: 'none' }],
    ['  Bearer ord_abc  ', { kind: 'bearer', token: 'ord_abc' }],
    ['Bearerx ord_abc', { kind: 'none' }],
  ];
  for (const [value, expected] of cases) {
    it(`reads ${JSON.stringify(value)}`, () => {
      assert.deepEqual(parseAuthorization(value), expected);
    });
  }
});

describe('isWellFormedToken()', () => {
  it('refuses other shapes', () => {
    for (const t of ['ord_', 'ord_short', `xyz_${'a'.repeat(43)}`, `ord_${'a'.repeat(44)}`, `ord_${'a'.repeat(53)}=`]) {
      assert.equal(isWellFormedToken(t), false, t);
    }
  });
});

describe('parseScopes()', () => {
  it('splits, trims, de-duplicates and reports unknown scopes', () => {
    assert.deepEqual(parseScopes(' orders:read,orders:read, users:write,,admin '), {
      scopes: ['orders:read', 'users:write'],
      unknown: ['admin'],
    });
  });
});

describe('parseTtl()', () => {
  it('reads s, m, h and d', () => {
    assert.equal(parseTtl('90s'), 90);
    assert.equal(parseTtl('15m'), 900);
    assert.equal(parseTtl('12h'), 43_200);
    assert.equal(parseTtl('30d'), 2_592_000);
  });
  it('refuses anything else', () => {
    for (const t of ['', '0d', '30', 'd', '1w', '-1d', '1.5h', '30 d', '1234567d'])
      assert.equal(parseTtl(t), undefined, t);
  });
});
