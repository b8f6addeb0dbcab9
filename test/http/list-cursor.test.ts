/**
 * The pure parts of cursor pages (contract §4 "Deep pages"): the order a
 * sort gives, the cursor's text and what it is bound to, its refusals, the
 * depth `page` reaches, and the SQL fragments of a page (the keyset, the
 * row's position, the OFFSET or none). The HTTP behaviour, on both
 * databases, is test/api/cursor-pages.test.ts.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { maxPage, parseListQuery, type ListSpec } from '../../src/http/list-query.ts';
import { decodeCursor, encodeCursor } from '../../src/http/cursor.ts';
import { sortOrder, type KeyType } from '../../src/http/sort-order.ts';
import { pageStatement } from '../../src/db/page.ts';
import { keyset, sortKey, type OrderKey } from '../../src/db/sort-sql.ts';

type Key = 'id' | 'status' | 'createdAt' | 'total';
const spec: ListSpec<Key, { status: string }> = {
  sortKeys: ['id', 'status', 'createdAt', 'total'],
  keyTypes: { id: 'bigint', status: 'text', createdAt: 'timestamptz', total: 'numeric' },
  filters: { status: (v) => (['pending', 'paid'].includes(v) ? { value: v } : { error: 'must be pending or paid' }) },
};
const TYPES: Record<string, KeyType> = spec.keyTypes;
/** The key the cursors of these tests are signed with, and another one. */
const KEY = new Uint8Array(32).fill(1);
const OTHER_KEY = new Uint8Array(32).fill(2);
const parse = (qs: string, collection = '/orders') => parseListQuery(new URLSearchParams(qs), spec, collection, KEY);
const asc = (key: string) => ({ key, descending: false });
const desc = (key: string) => ({ key, descending: true });
const MALFORMED = "is not a cursor of this collection; pass the next link's cursor exactly as given";
const OTHER = 'was made for other filters or another sort; keep those of the link that gave it';

/**
 * `payload` (a base64url text) and its signature under `key`, as encodeCursor() signs, restated here: the first
 * 16 bytes of HMAC-SHA256(key, "orders-cursor." + payload), in base64url.
 */
function sign(payload: string, key: Uint8Array = KEY): string {
  const mac = createHmac('sha256', key).update(`orders-cursor.${payload}`).digest().subarray(0, 16);
  return `${payload}.${mac.toString('base64url')}`;
}
/** The JSON text `text` as a signed cursor's payload. */
const signedJson = (text: string, key: Uint8Array = KEY) => sign(Buffer.from(text).toString('base64url'), key);
/** The two parts of a cursor's text. */
const partsOf = (cursor: string) => cursor.split('.') as [string, string];
/** The JSON a cursor's payload holds. */
const payloadOf = (cursor: string) => JSON.parse(Buffer.from(partsOf(cursor)[0], 'base64url').toString('utf8'));

describe('sortOrder()', () => {
  it('appends id in the direction of the last key, ascending by default', () => {
    assert.deepEqual(sortOrder([]), [asc('id')]);
    assert.deepEqual(sortOrder([desc('total')]), [desc('total'), desc('id')]);
    assert.deepEqual(sortOrder([desc('total'), asc('createdAt')]), [desc('total'), asc('createdAt'), asc('id')]);
  });
  it('ends at id when given: the keys after it never decide', () => {
    assert.deepEqual(sortOrder([desc('total'), asc('id')]), [desc('total'), asc('id')]);
    assert.deepEqual(sortOrder([asc('id'), desc('total')]), [asc('id')]);
  });
});

describe('encodeCursor()', () => {
  it('is base64url of {"v":2,"f":<fingerprint>,"k":[values],"p":page}, a dot, and base64url of its signature', () => {
    const cursor = encodeCursor(KEY, '/orders', { sort: [], filters: {} }, ['42'], 3);
    assert.equal(cursor, 'eyJ2IjoyLCJmIjoiMnQ5UWpSV3cydV9Ea0dNZCIsImsiOlsiNDIiXSwicCI6M30.CKfPvDx7fYVHxoeCDkZc7g');
    assert.match(cursor, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/);
    const [payload] = partsOf(cursor);
    assert.equal(Buffer.from(payload, 'base64url').toString(), '{"v":2,"f":"2t9QjRWw2u_DkGMd","k":["42"],"p":3}');
    // The signature: the first 16 bytes of HMAC-SHA256(key, "orders-cursor." + payload).
    assert.equal(sign(payload), cursor);
    assert.equal(Buffer.from(partsOf(cursor)[1], 'base64url').length, 16);
  });
  it('carries the page number it is given', () => {
    for (const page of [2, 3, 501, 10_001, Number.MAX_SAFE_INTEGER])
      assert.equal(payloadOf(encodeCursor(KEY, '/orders', { sort: [], filters: {} }, ['42'], page)).p, page);
  });
  it('signs under the key given: two keys, one payload, two signatures', () => {
    const scope = { sort: [desc('total')], filters: { status: 'paid' } };
    const [payload1, signature1] = partsOf(encodeCursor(KEY, '/orders', scope, ['12.50', '7'], 2));
    const [payload2, signature2] = partsOf(encodeCursor(OTHER_KEY, '/orders', scope, ['12.50', '7'], 2));
    assert.equal(payload1, payload2);
    assert.notEqual(signature1, signature2);
    assert.equal(`${payload2}.${signature2}`, sign(payload2, OTHER_KEY));
  });
  it('binds the cursor to the collection, its filters and its order; not to how the order is written', () => {
    const f = (collection: string, scope: Parameters<typeof encodeCursor>[2]) =>
      payloadOf(encodeCursor(KEY, collection, scope, ['1'], 2)).f;
    const base = f('/orders', { sort: [desc('total')], filters: { status: 'paid' } });
    assert.equal(f('/orders', { sort: [desc('total'), desc('id')], filters: { status: 'paid' } }), base);
    assert.equal(f('/orders', { sort: [desc('total')], filters: { status: 'paid', customerId: undefined } }), base);
    for (const other of [
      f('/users/3/orders', { sort: [desc('total')], filters: { status: 'paid' } }),
      f('/orders', { sort: [asc('total')], filters: { status: 'paid' } }),
      f('/orders', { sort: [desc('total'), asc('id')], filters: { status: 'paid' } }),
      f('/orders', { sort: [desc('total')], filters: { status: 'pending' } }),
      f('/orders', { sort: [desc('total')], filters: {} }),
    ])
      assert.notEqual(other, base);
  });
});

describe('decodeCursor()', () => {
  const scope = { sort: [asc('createdAt'), desc('total')], filters: { status: 'paid' } };
  const values = ['2026-03-01T10:00:00.123401Z', '12.50', '7'];
  const made = encodeCursor(KEY, '/orders', scope, values, 2);

  it('gives back the values and the page of a cursor made for this collection, filters and order', () => {
    assert.deepEqual(decodeCursor(KEY, made, '/orders', scope, TYPES), { values, page: 2 });
    for (const page of [3, 500, 501, 10_001, Number.MAX_SAFE_INTEGER])
      assert.deepEqual(decodeCursor(KEY, encodeCursor(KEY, '/orders', scope, values, page), '/orders', scope, TYPES), {
        values,
        page,
      });
  });

  it('takes a payload signed as encodeCursor() signs it (the helper of these tests signs alike)', () => {
    const f = payloadOf(made).f as string;
    assert.equal(sign(partsOf(made)[0]), made);
    assert.deepEqual(
      decodeCursor(KEY, signedJson(`{"v":2,"f":"${f}","k":${JSON.stringify(values)},"p":7}`), '/orders', scope, TYPES),
      { values, page: 7 },
    );
  });

  it('refuses one made for another query', () => {
    assert.deepEqual(decodeCursor(KEY, made, '/orders', { ...scope, filters: {} }, TYPES), { error: OTHER });
    assert.deepEqual(decodeCursor(KEY, made, '/products', scope, TYPES), { error: OTHER });
  });

  describe('refuses what this service never made', () => {
    const [payload, signature] = partsOf(made);
    const f = payloadOf(made).f as string;
    const k = JSON.stringify(values);
    const other = (c: string) => (c === 'A' ? 'B' : 'A');
    const cases: [string, string][] = [
      ['an empty cursor', ''],
      ['a cursor longer than 512 characters', 'A'.repeat(513)],
      ['a signed cursor longer than 512 characters', sign('A'.repeat(500))],
      ['characters outside base64url in the signature', `${made.slice(0, -1)}+`],
      ['characters outside base64url in the payload', sign(`${payload.slice(0, -1)}+`)],
      ['padding after the signature', `${made}=`],
      ['padding after the payload', `${payload}=.${signature}`],
      ['a changed last character', `${made.slice(0, -1)}${made.endsWith('0') ? '1' : '0'}`],
      [
        'a changed first character of the signature',
        `${payload}.${other(signature[0] as string)}${signature.slice(1)}`,
      ],
      ['a trailing character', `${made}A`],
      // The signature.
      ['a cursor signed with another key', encodeCursor(OTHER_KEY, '/orders', scope, values, 2)],
      [
        'a payload changed under its original signature',
        `${partsOf(encodeCursor(KEY, '/orders', scope, values, 3))[0]}.${signature}`,
      ],
      ['a payload changed in one character', `${other(payload[0] as string)}${payload.slice(1)}.${signature}`],
      ['a truncated signature (one character short)', made.slice(0, -1)],
      ['a truncated signature (three characters short)', made.slice(0, -3)],
      ['an empty signature', `${payload}.`],
      ['no payload', `.${signature}`],
      [
        'the whole HMAC (32 bytes) as the signature',
        `${payload}.${createHmac('sha256', KEY).update(`orders-cursor.${payload}`).digest('base64url')}`,
      ],
      ['no dot: the payload alone', payload],
      ['no dot: the payload and its signature run together', `${payload}${signature}`],
      ['two dots: a second signature', `${made}.${signature}`],
      ['two dots: an empty part', `${payload}..${signature}`],
      ['a lone dot', '.'],
      // The payload, signed with the right key.
      ['bytes that are not UTF-8', sign(Buffer.from([0xc3, 0x28]).toString('base64url'))],
      ['text that is not JSON', signedJson('{"v":2,')],
      ['JSON that is no object', signedJson('["v"]')],
      ['JSON null', signedJson('null')],
      ['version 1 (no page)', signedJson(`{"v":1,"f":"${f}","k":${k}}`)],
      ['version 1 with a page', signedJson(`{"v":1,"f":"${f}","k":${k},"p":2}`)],
      ['another version', signedJson(`{"v":3,"f":"${f}","k":${k},"p":2}`)],
      ['an unknown member', signedJson(`{"v":2,"f":"${f}","k":${k},"p":2,"x":1}`)],
      ['no fingerprint', signedJson(`{"v":2,"k":${k},"p":2}`)],
      ['values that are no strings', signedJson(`{"v":2,"f":"${f}","k":["2026-03-01T10:00:00.123401Z",12.5,7],"p":2}`)],
      ['too few values', signedJson(`{"v":2,"f":"${f}","k":["2026-03-01T10:00:00.123401Z","12.50"],"p":2}`)],
      ['too many values', signedJson(`{"v":2,"f":"${f}","k":${JSON.stringify([...values, '8'])},"p":2}`)],
      // The page number: a safe integer of at least 2 (page 1 is no cursor page).
      ['page 1', signedJson(`{"v":2,"f":"${f}","k":${k},"p":1}`)],
      ['page 0', signedJson(`{"v":2,"f":"${f}","k":${k},"p":0}`)],
      ['page -1', signedJson(`{"v":2,"f":"${f}","k":${k},"p":-1}`)],
      ['page 2.5', signedJson(`{"v":2,"f":"${f}","k":${k},"p":2.5}`)],
      ['a page that is a string', signedJson(`{"v":2,"f":"${f}","k":${k},"p":"2"}`)],
      ['a page that is null', signedJson(`{"v":2,"f":"${f}","k":${k},"p":null}`)],
      ['a page beyond the safe integers', signedJson(`{"v":2,"f":"${f}","k":${k},"p":9007199254740992}`)],
      ['no page', signedJson(`{"v":2,"f":"${f}","k":${k}}`)],
    ];
    for (const [what, text] of cases) {
      it(what, () => {
        assert.deepEqual(decodeCursor(KEY, text, '/orders', scope, TYPES), { error: MALFORMED });
      });
    }
    it('a text whose payload decodes to the bytes of a cursor but is not their encoding, though signed', () => {
      const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      // A payload whose last character has unused bits (its bytes are no multiple of 3): set one of them.
      const id = ['7', '70', '700'].find(
        (v) => partsOf(encodeCursor(KEY, '/orders', scope, [...values.slice(0, 2), v], 2))[0].length % 4,
      ) as string;
      const canonical = encodeCursor(KEY, '/orders', scope, [...values.slice(0, 2), id], 2);
      const [text] = partsOf(canonical);
      const last = ALPHABET.indexOf(text.at(-1) as string);
      const changed = `${text.slice(0, -1)}${ALPHABET[last ^ 1]}`;
      assert.deepEqual(Buffer.from(changed, 'base64url'), Buffer.from(text, 'base64url'));
      assert.deepEqual(decodeCursor(KEY, canonical, '/orders', scope, TYPES), {
        values: [...values.slice(0, 2), id],
        page: 2,
      });
      assert.deepEqual(decodeCursor(KEY, sign(changed), '/orders', scope, TYPES), { error: MALFORMED });
    });
    it('a text whose signature decodes to the right bytes but is not their encoding', () => {
      const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      // 16 bytes are 22 characters, the last with 4 unused bits: set one of them.
      const last = ALPHABET.indexOf(signature.at(-1) as string);
      const changed = `${signature.slice(0, -1)}${ALPHABET[last ^ 1]}`;
      assert.deepEqual(Buffer.from(changed, 'base64url'), Buffer.from(signature, 'base64url'));
      assert.deepEqual(decodeCursor(KEY, `${payload}.${changed}`, '/orders', scope, TYPES), { error: MALFORMED });
    });
    it('a cursor signed here that is longer than 512 characters, and takes the same one shorter', () => {
      const byStatus = { sort: [asc('status')], filters: {} };
      const long = encodeCursor(KEY, '/orders', byStatus, ['é'.repeat(256), '7'], 2);
      assert.ok(long.length > 512, String(long.length));
      assert.deepEqual(decodeCursor(KEY, long, '/orders', byStatus, TYPES), { error: MALFORMED });
      const short = encodeCursor(KEY, '/orders', byStatus, ['é'.repeat(100), '7'], 2);
      assert.ok(short.length <= 512, String(short.length));
      assert.deepEqual(decodeCursor(KEY, short, '/orders', byStatus, TYPES), {
        values: ['é'.repeat(100), '7'],
        page: 2,
      });
    });
    it('refuses with the same detail a cursor of another query signed with another key: the signature first', () => {
      const elsewhere = encodeCursor(OTHER_KEY, '/orders', { ...scope, filters: {} }, values, 2);
      assert.deepEqual(decodeCursor(KEY, elsewhere, '/orders', scope, TYPES), { error: MALFORMED });
      assert.deepEqual(decodeCursor(OTHER_KEY, elsewhere, '/orders', scope, TYPES), { error: OTHER });
    });
  });

  describe('checks each value against its key type, as PostgreSQL would take it', () => {
    const check = (type: KeyType, value: string) => {
      const one = { sort: [asc('v')], filters: {} };
      const types = { v: type, id: 'bigint' as const };
      return 'values' in decodeCursor(KEY, encodeCursor(KEY, '/x', one, [value, '1'], 2), '/x', one, types);
    };
    const cases: [KeyType, string, boolean][] = [
      ['timestamptz', '2026-03-01T10:00:00.123401Z', true],
      ['timestamptz', '2024-02-29T00:00:00.000000Z', true],
      ['timestamptz', '2000-02-29T00:00:00.000000Z', true],
      ['timestamptz', '0001-01-01T00:00:00.000000Z', true],
      ['timestamptz', '9999-12-31T23:59:59.999999Z', true],
      ['timestamptz', '2023-02-29T00:00:00.000000Z', false],
      ['timestamptz', '1900-02-29T00:00:00.000000Z', false],
      ['timestamptz', '2026-04-31T00:00:00.000000Z', false],
      ['timestamptz', '2026-00-01T00:00:00.000000Z', false],
      ['timestamptz', '2026-01-00T00:00:00.000000Z', false],
      ['timestamptz', '0000-01-01T00:00:00.000000Z', false],
      ['timestamptz', '2026-01-01T24:00:00.000000Z', false],
      ['timestamptz', '2026-01-01T00:60:00.000000Z', false],
      ['timestamptz', '2026-01-01T00:00:60.000000Z', false],
      ['timestamptz', '2026-01-01T00:00:00.123Z', false],
      ['timestamptz', '2026-01-01T00:00:00.000000+00:00', false],
      ['timestamptz', '2026-01-01 00:00:00.000000Z', false],
      ['timestamptz', 'infinity', false],
      ['timestamptz', 'now', false],
      ['numeric', '12.50', true],
      ['numeric', '0', true],
      ['numeric', '-1.5', true],
      ['numeric', 'NaN', false],
      ['numeric', '1e3', false],
      ['numeric', '.5', false],
      ['numeric', '1.', false],
      ['numeric', ' 1', false],
      ['numeric', '123456789012345678901', false],
      ['bigint', '1', true],
      ['bigint', '9223372036854775807', true],
      ['bigint', '9223372036854775808', false],
      ['bigint', '0', false],
      ['bigint', '-1', false],
      ['bigint', '01', false],
      ['bigint', '1.0', false],
      ['text', 'paid', true],
      ['text', '', true],
      ['text', 'é✓', true],
      ['text', 'a\u0000b', false],
      ['text', '\ud800', false],
      ['text', 'x'.repeat(257), false],
    ];
    for (const [type, value, valid] of cases) {
      const shown = JSON.stringify(value.length > 20 ? `${value.slice(0, 20)}…` : value);
      it(`${valid ? 'takes' : 'refuses'} ${shown} as ${type}`, () => {
        assert.equal(check(type, value), valid);
      });
    }
  });
});

describe('parseListQuery() with page and cursor', () => {
  it('takes page while (page - 1) × pageSize < 10000, and no further', () => {
    assert.deepEqual(maxPage(20), 500);
    assert.deepEqual(maxPage(3), 3334);
    assert.deepEqual(maxPage(1), 10000);
    for (const [qs, ok] of [
      ['page=500', true],
      ['page=501', false],
      ['page=100&pageSize=100', true],
      ['page=101&pageSize=100', false],
      ['page=10000&pageSize=1', true],
      ['page=10001&pageSize=1', false],
      ['pageSize=3&page=3334', true],
      ['pageSize=3&page=3335', false],
      ['page=123456789012345678901234567890', false],
    ] as const)
      assert.equal(parse(qs).ok, ok, qs);
    assert.deepEqual(parse('page=501&pageSize=101'), {
      ok: false,
      errors: [
        { parameter: 'pageSize', detail: 'must be an integer from 1 to 100' },
        {
          parameter: 'page',
          detail:
            'must be at most 500 with pageSize 20: page reaches at most 10,000 rows deep; ' +
            "follow the next link's cursor to go further",
        },
      ],
    });
  });

  it('reads a cursor as the position after which the page starts, and the page number it carries', () => {
    const scope = { sort: [desc('total')], filters: { status: 'paid' } };
    const cursor = encodeCursor(KEY, '/orders', scope, ['12.50', '7'], 4);
    assert.deepEqual(parse(`status=paid&sort=-total&cursor=${cursor}&pageSize=5`), {
      ok: true,
      value: { page: 4, pageSize: 5, sort: [desc('total')], filters: { status: 'paid' }, after: ['12.50', '7'] },
    });
    assert.deepEqual(parse(`cursor=${cursor}&sort=-total,-id&status=paid`), {
      ok: true,
      value: {
        page: 4,
        pageSize: 20,
        sort: [desc('total'), desc('id')],
        filters: { status: 'paid' },
        after: ['12.50', '7'],
      },
    });
    // Deeper than page reaches: the cursor's number is kept as it is.
    const deep = encodeCursor(KEY, '/orders', scope, ['12.50', '7'], 10_002);
    assert.deepEqual(parse(`status=paid&sort=-total&cursor=${deep}&pageSize=1`), {
      ok: true,
      value: { page: 10_002, pageSize: 1, sort: [desc('total')], filters: { status: 'paid' }, after: ['12.50', '7'] },
    });
  });

  it('refuses a cursor with page, with other filters or sort, on another collection, or repeated', () => {
    const cursor = encodeCursor(KEY, '/orders', { sort: [], filters: {} }, ['7'], 2);
    const WITH_PAGE = 'cannot be given with page: the cursor carries its page number';
    const cases: [string, string, { parameter: string; detail: string }[]][] = [
      [`cursor=${cursor}&page=1`, '/orders', [{ parameter: 'cursor', detail: WITH_PAGE }]],
      [`cursor=${cursor}&page=2`, '/orders', [{ parameter: 'cursor', detail: WITH_PAGE }]],
      [
        `page=x&cursor=${cursor}`,
        '/orders',
        [
          { parameter: 'page', detail: 'must be an integer of at least 1' },
          { parameter: 'cursor', detail: WITH_PAGE },
        ],
      ],
      [`cursor=${cursor}&status=paid`, '/orders', [{ parameter: 'cursor', detail: OTHER }]],
      [`cursor=${cursor}&sort=-id`, '/orders', [{ parameter: 'cursor', detail: OTHER }]],
      [`cursor=${cursor}`, '/users/3/orders', [{ parameter: 'cursor', detail: OTHER }]],
      [`cursor=${cursor}&cursor=${cursor}`, '/orders', [{ parameter: 'cursor', detail: 'must be given once' }]],
      ['cursor=', '/orders', [{ parameter: 'cursor', detail: MALFORMED }]],
      // Signed with another key, or changed: not a cursor this service made.
      [
        `cursor=${encodeCursor(OTHER_KEY, '/orders', { sort: [], filters: {} }, ['7'], 2)}`,
        '/orders',
        [{ parameter: 'cursor', detail: MALFORMED }],
      ],
      [`cursor=${cursor.slice(0, -1)}`, '/orders', [{ parameter: 'cursor', detail: MALFORMED }]],
      [`cursor=${partsOf(cursor)[0]}`, '/orders', [{ parameter: 'cursor', detail: MALFORMED }]],
      // The rest of the query is wrong: the cursor is not checked against it.
      [`cursor=${cursor}&status=lost`, '/orders', [{ parameter: 'status', detail: 'must be pending or paid' }]],
    ];
    for (const [qs, collection, errors] of cases) assert.deepEqual(parse(qs, collection), { ok: false, errors }, qs);
    assert.deepEqual(parse(`cursor=${cursor}&sort=id,total`), {
      ok: true,
      value: { page: 2, pageSize: 20, sort: [asc('id'), asc('total')], filters: {}, after: ['7'] },
    });
  });
});

describe('keyset()', () => {
  const columns = { id: 'o.id', status: 'o.status', createdAt: 'o.created_at', total: 'o.total' };
  const key = (name: string, descending: boolean): OrderKey => ({
    key: name,
    descending,
    type: TYPES[name] as KeyType,
  });
  const cases: [string, OrderKey[], string[], number, string[], string][] = [
    ['id alone', [key('id', false)], ['7'], 1, [], 'o.id > $1::bigint'],
    ['-id alone', [key('id', true)], ['7'], 4, [], 'o.id < $4::bigint'],
    [
      'one direction: a row comparison, the timestamp through text',
      [key('createdAt', true), key('id', true)],
      ['2026-01-01T00:00:00.000001Z', '7'],
      1,
      [],
      '(o.created_at, o.id) < ($1::text::timestamptz, $2::bigint)',
    ],
    [
      'sort=-total,id: the first key bounds the range, the expanded OR decides ties',
      [key('total', true), key('id', false)],
      ['12.50', '7'],
      3,
      [],
      'o.total <= $3::numeric AND (o.total < $3::numeric OR (o.total = $3::numeric AND o.id > $4::bigint))',
    ],
    [
      'sort=status,-createdAt: runs of one direction compare as rows',
      [key('status', false), key('createdAt', true), key('id', true)],
      ['paid', '2026-01-01T00:00:00.000001Z', '7'],
      1,
      [],
      'o.status >= $1::text AND (o.status > $1::text OR ' +
        '(o.status = $1::text AND (o.created_at, o.id) < ($2::text::timestamptz, $3::bigint)))',
    ],
    [
      'the same with status pinned by a filter: one row comparison',
      [key('status', false), key('createdAt', true), key('id', true)],
      ['paid', '2026-01-01T00:00:00.000001Z', '7'],
      2,
      ['status'],
      '(o.created_at, o.id) < ($2::text::timestamptz, $3::bigint)',
    ],
    [
      'three runs',
      [key('status', true), key('createdAt', false), key('total', false), key('id', true)],
      ['paid', '2026-01-01T00:00:00.000001Z', '1.00', '7'],
      1,
      [],
      'o.status <= $1::text AND (o.status < $1::text OR (o.status = $1::text AND ' +
        '((o.created_at, o.total) > ($2::text::timestamptz, $3::numeric) OR ' +
        '(o.created_at = $2::text::timestamptz AND o.total = $3::numeric AND o.id < $4::bigint))))',
    ],
  ];
  for (const [what, order, after, first, pinned, sql] of cases) {
    it(what, () => {
      const values = after.filter((_, i) => !pinned.includes(order[i]!.key));
      assert.deepEqual(keyset(order, columns, after, first, pinned), { sql, params: values });
    });
  }
  it('refuses values that do not match the keys (a programming error)', () => {
    assert.throws(() => keyset([key('id', false)], columns, ['1', '2'], 1), /a keyset of 1 keys needs as many values/);
  });
});

describe('sortKey()', () => {
  it("is each key's value as text that casts back exactly: timestamps in UTC to the microsecond", () => {
    const order: OrderKey[] = [
      { key: 'createdAt', descending: true, type: 'timestamptz' },
      { key: 'total', descending: false, type: 'numeric' },
      { key: 'status', descending: false, type: 'text' },
      { key: 'id', descending: false, type: 'bigint' },
    ];
    assert.equal(
      sortKey(order, { id: 'o.id', status: 'o.status', createdAt: 'o.created_at', total: 'o.total' }),
      `json_build_array(to_char(o.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), o.total::text, ` +
        'o.status, o.id::text)',
    );
  });
});

describe('pageStatement()', () => {
  const columns = { id: 'o.id', status: 'o.status' };
  const byId: OrderKey[] = [{ key: 'id', descending: false, type: 'bigint' }];
  it('a page by number: the keyset TRUE, one row more than the page, and its OFFSET', () => {
    assert.deepEqual(pageStatement({ list: 'L', count: 'C', columns }, { pageSize: 20, order: byId, page: 3 }), {
      fragments: {
        where: 'TRUE',
        after: 'TRUE',
        orderBy: 'o.id ASC',
        sortKey: 'json_build_array(o.id::text)',
        limit: '$1',
        offset: '$2::bigint',
      },
      params: [21, '40'],
    });
  });
  it('a cursor page: the keyset after the filters, and no OFFSET', () => {
    const sql = {
      list: 'L',
      count: 'C',
      columns,
      where: 'o.status = $1',
      params: ['paid'],
      totalWhere: 'c.status = $1',
      pinned: ['status'],
    };
    const order: OrderKey[] = [{ key: 'status', descending: false, type: 'text' }, ...byId];
    assert.deepEqual(pageStatement(sql, { pageSize: 20, order, after: ['paid', '9'] }), {
      fragments: {
        where: 'o.status = $1',
        totalWhere: 'c.status = $1',
        after: 'o.id > $2::bigint',
        orderBy: 'o.status ASC, o.id ASC',
        sortKey: 'json_build_array(o.status, o.id::text)',
        limit: '$3',
        offset: '0',
      },
      params: ['paid', '9', 21],
    });
  });
});
