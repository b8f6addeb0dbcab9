/**
 * The pure parts of cursor pages (contract §4 "Deep pages"): the order a
 * sort gives, the cursor's text and what it is bound to, its refusals, the
 * depth `page` reaches, and the SQL fragments of a page (the keyset, the
 * row's position, the OFFSET or none). The HTTP behaviour, on both
 * databases, is test/api/cursor-pages.test.ts.
 */
import assert from 'node:assert/strict';
import { createCipheriv, createHmac, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { maxPage, parseListQuery, type ListSpec } from '../../src/http/list-query.ts';
import { decodeCursor, encodeCursor } from '../../src/http/cursor.ts';
import { cursorPayload } from '../support/cursor.ts';
import { sortOrder, type KeyType } from '../../src/http/sort-order.ts';
import { pageStatement, type PageSql } from '../../src/db/page.ts';
import { keyset, sortKey, type OrderKey } from '../../src/db/sort-sql.ts';

type Key = 'id' | 'status' | 'createdAt' | 'total';
const spec: ListSpec<Key, { status: string }> = {
  sortKeys: ['id', 'status', 'createdAt', 'total'],
  keyTypes: { id: 'bigint', status: 'text', createdAt: 'timestamptz', total: 'numeric' },
  filters: { status: (v) => (['pending', 'paid'].includes(v) ? { value: v } : { error: 'must be pending or paid' }) },
};
const TYPES: Record<string, KeyType> = spec.keyTypes;
/** The key the cursors of these tests are sealed with, and another one. */
const KEY = new Uint8Array(32).fill(1);
const OTHER_KEY = new Uint8Array(32).fill(2);
/** Who asks in these tests. */
const ALICE = 'user 7';
const parse = (qs: string, collection = '/orders', principal = ALICE) =>
  parseListQuery(new URLSearchParams(qs), spec, collection, { keys: [KEY], principal });
const asc = (key: string) => ({ key, descending: false });
const desc = (key: string) => ({ key, descending: true });
const MALFORMED = "is not a cursor of this collection; pass the next link's cursor exactly as given";
const OTHER =
  'was made for other filters, another sort or page size, or another client; keep those of the link that gave it';
/** A scope of these tests: page size 20, asked by ALICE. */
const scoped = (sort: { key: string; descending: boolean }[], filters: Record<string, unknown>) => ({
  sort,
  filters,
  pageSize: 20,
  principal: ALICE,
});

/**
 * `text` sealed as encodeCursor() seals a payload, restated here: AES-256-GCM under HMAC-SHA256(key,
 * "orders-cursor-seal"), with the additional data "orders-cursor.v3"; the IV, the ciphertext and the tag, in
 * base64url.
 */
function seal(text: string | Buffer, key: Uint8Array = KEY): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', createHmac('sha256', key).update('orders-cursor-seal').digest(), iv);
  cipher.setAAD(Buffer.from('orders-cursor.v3'));
  const sealed = Buffer.concat([cipher.update(text), cipher.final()]);
  return Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString('base64url');
}
/** The JSON a cursor sealed under `key` holds. */
function payloadOf(cursor: string, key: Uint8Array = KEY) {
  return cursorPayload(cursor, key);
}

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
  it('seals {"v":3,"f":<fingerprint>,"k":[values],"p":page} under the key: opaque, base64url', () => {
    const cursor = encodeCursor(KEY, '/orders', scoped([], {}), ['42'], 3);
    assert.match(cursor, /^[A-Za-z0-9_-]+$/);
    // Nothing of the position shows: the last row's values are not in the text, nor in its bytes.
    assert.ok(!Buffer.from(cursor, 'base64url').toString('latin1').includes('42'));
    assert.deepEqual(payloadOf(cursor), { v: 3, f: payloadOf(cursor).f, k: ['42'], p: 3 });
    // One position, one cursor: a page served twice has the same next link (and so the same body and ETag).
    assert.equal(encodeCursor(KEY, '/orders', scoped([], {}), ['42'], 3), cursor);
  });
  it('derives its IV from the payload: another position or page, another IV; another key, another IV', () => {
    const ivOf = (cursor: string) => Buffer.from(cursor, 'base64url').subarray(0, 12).toString('hex');
    const cursor = encodeCursor(KEY, '/orders', scoped([], {}), ['42'], 3);
    const others = [
      encodeCursor(KEY, '/orders', scoped([], {}), ['43'], 3),
      encodeCursor(KEY, '/orders', scoped([], {}), ['42'], 4),
      encodeCursor(KEY, '/products', scoped([], {}), ['42'], 3),
      encodeCursor(OTHER_KEY, '/orders', scoped([], {}), ['42'], 3),
    ];
    assert.equal(new Set([cursor, ...others].map(ivOf)).size, 5);
  });
  it('carries the page number it is given', () => {
    for (const page of [2, 3, 501, 10_001, Number.MAX_SAFE_INTEGER])
      assert.equal(payloadOf(encodeCursor(KEY, '/orders', scoped([], {}), ['42'], page)).p, page);
  });
  it('seals under the key given: another key does not open it', () => {
    const cursor = encodeCursor(OTHER_KEY, '/orders', scoped([], {}), ['42'], 2);
    assert.equal(payloadOf(cursor, OTHER_KEY).p, 2);
    assert.throws(() => payloadOf(cursor, KEY));
  });
  it('binds the cursor to the collection, query, page size and client; not to how the order is written', () => {
    type Scope = Parameters<typeof encodeCursor>[2];
    const f = (collection: string, scope: Scope) => payloadOf(encodeCursor(KEY, collection, scope, ['1'], 2)).f;
    const base = f('/orders', scoped([desc('total')], { status: 'paid' }));
    assert.equal(f('/orders', scoped([desc('total'), desc('id')], { status: 'paid' })), base);
    assert.equal(f('/orders', scoped([desc('total')], { status: 'paid', customerId: undefined })), base);
    for (const other of [
      f('/users/3/orders', scoped([desc('total')], { status: 'paid' })),
      f('/orders', scoped([asc('total')], { status: 'paid' })),
      f('/orders', scoped([desc('total'), asc('id')], { status: 'paid' })),
      f('/orders', scoped([desc('total')], { status: 'pending' })),
      f('/orders', scoped([desc('total')], {})),
      f('/orders', { ...scoped([desc('total')], { status: 'paid' }), pageSize: 21 }),
      f('/orders', { ...scoped([desc('total')], { status: 'paid' }), principal: 'user 8' }),
      f('/orders', { ...scoped([desc('total')], { status: 'paid' }), principal: 'anyone' }),
    ])
      assert.notEqual(other, base);
  });
});

describe('decodeCursor()', () => {
  const scope = scoped([asc('createdAt'), desc('total')], { status: 'paid' });
  const values = ['2026-03-01T10:00:00.123401Z', '12.50', '7'];
  const made = encodeCursor(KEY, '/orders', scope, values, 2);

  it('gives back the values and the page of a cursor made for this collection, query and client', () => {
    assert.deepEqual(decodeCursor([KEY], made, '/orders', scope, TYPES), { values, page: 2 });
    for (const page of [3, 500, 501, 10_001, Number.MAX_SAFE_INTEGER])
      assert.deepEqual(
        decodeCursor([KEY], encodeCursor(KEY, '/orders', scope, values, page), '/orders', scope, TYPES),
        { values, page },
      );
  });

  it('opens a cursor sealed under any key given: the current one and the previous (a rotation)', () => {
    const before = encodeCursor(OTHER_KEY, '/orders', scope, values, 2);
    assert.deepEqual(decodeCursor([KEY, OTHER_KEY], before, '/orders', scope, TYPES), { values, page: 2 });
    assert.deepEqual(decodeCursor([KEY], before, '/orders', scope, TYPES), { error: MALFORMED, unopened: true });
  });

  it('takes a payload sealed as encodeCursor() seals it (the helper of these tests seals alike)', () => {
    const f = payloadOf(made).f as string;
    assert.deepEqual(
      decodeCursor([KEY], seal(`{"v":3,"f":"${f}","k":${JSON.stringify(values)},"p":7}`), '/orders', scope, TYPES),
      { values, page: 7 },
    );
  });

  it('refuses one made for another query, page size or client', () => {
    for (const other of [
      { ...scope, filters: {} },
      { ...scope, pageSize: 5 },
      { ...scope, principal: 'user 8' },
      { ...scope, principal: 'anyone' },
    ])
      assert.deepEqual(decodeCursor([KEY], made, '/orders', other, TYPES), { error: OTHER });
    assert.deepEqual(decodeCursor([KEY], made, '/products', scope, TYPES), { error: OTHER });
  });

  describe('refuses what this service never made', () => {
    const f = payloadOf(made).f as string;
    const k = JSON.stringify(values);
    const bytes = Buffer.from(made, 'base64url');
    const flipped = (at: number) => {
      const copy = Buffer.from(bytes);
      copy[at] = (copy[at] as number) ^ 1;
      return copy.toString('base64url');
    };
    const unopened = { error: MALFORMED, unopened: true };
    const cases: [string, string, object][] = [
      ['an empty cursor', '', { error: MALFORMED }],
      ['a cursor longer than 512 characters', 'A'.repeat(513), { error: MALFORMED }],
      ['characters outside base64url', `${made.slice(0, -1)}+`, { error: MALFORMED }],
      ['padding after it', `${made}=`, { error: MALFORMED }],
      ['a dot in it', `${made.slice(0, 10)}.${made.slice(10)}`, { error: MALFORMED }],
      ['too short to hold an IV and a tag', made.slice(0, 30), { error: MALFORMED }],
      ['a changed IV', flipped(0), unopened],
      ['a changed ciphertext', flipped(14), unopened],
      ['a changed tag', flipped(bytes.length - 1), unopened],
      ['a truncated tag', bytes.subarray(0, bytes.length - 1).toString('base64url'), unopened],
      ['a cursor sealed under another key', encodeCursor(OTHER_KEY, '/orders', scope, values, 2), unopened],
      ['a trailing byte', Buffer.concat([bytes, Buffer.from([0])]).toString('base64url'), unopened],
      // The payload, sealed with the right key.
      ['bytes that are not UTF-8', seal(Buffer.from([0xc3, 0x28])), { error: MALFORMED }],
      ['text that is not JSON', seal('{"v":3,'), { error: MALFORMED }],
      ['JSON that is no object', seal('["v"]'), { error: MALFORMED }],
      ['JSON null', seal('null'), { error: MALFORMED }],
      ['version 2', seal(`{"v":2,"f":"${f}","k":${k},"p":2}`), { error: MALFORMED }],
      ['an unknown member', seal(`{"v":3,"f":"${f}","k":${k},"p":2,"x":1}`), { error: MALFORMED }],
      ['no fingerprint', seal(`{"v":3,"k":${k},"p":2}`), { error: MALFORMED }],
      [
        'values that are no strings',
        seal(`{"v":3,"f":"${f}","k":["2026-03-01T10:00:00.123401Z",12.5,7],"p":2}`),
        { error: MALFORMED },
      ],
      [
        'too few values',
        seal(`{"v":3,"f":"${f}","k":["2026-03-01T10:00:00.123401Z","12.50"],"p":2}`),
        { error: MALFORMED },
      ],
      [
        'too many values',
        seal(`{"v":3,"f":"${f}","k":${JSON.stringify([...values, '8'])},"p":2}`),
        { error: MALFORMED },
      ],
      // The page number: a safe integer of at least 2 (page 1 is no cursor page).
      ['page 1', seal(`{"v":3,"f":"${f}","k":${k},"p":1}`), { error: MALFORMED }],
      ['page 0', seal(`{"v":3,"f":"${f}","k":${k},"p":0}`), { error: MALFORMED }],
      ['page 2.5', seal(`{"v":3,"f":"${f}","k":${k},"p":2.5}`), { error: MALFORMED }],
      ['a page that is a string', seal(`{"v":3,"f":"${f}","k":${k},"p":"2"}`), { error: MALFORMED }],
      [
        'a page beyond the safe integers',
        seal(`{"v":3,"f":"${f}","k":${k},"p":9007199254740992}`),
        { error: MALFORMED },
      ],
      ['no page', seal(`{"v":3,"f":"${f}","k":${k}}`), { error: MALFORMED }],
    ];
    for (const [what, text, refusal] of cases) {
      it(what, () => {
        assert.deepEqual(decodeCursor([KEY], text, '/orders', scope, TYPES), refusal);
      });
    }
    it('a text whose bytes are a cursor but is not their encoding', () => {
      const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      // A cursor whose last character has unused bits (its bytes are no multiple of 3): set one of them.
      let canonical = made;
      while (canonical.length % 4 === 0)
        canonical = encodeCursor(KEY, '/orders', scope, [...values.slice(0, 2), `${canonical.length}`], 2);
      const last = ALPHABET.indexOf(canonical.at(-1) as string);
      const changed = `${canonical.slice(0, -1)}${ALPHABET[last ^ 1]}`;
      assert.deepEqual(Buffer.from(changed, 'base64url'), Buffer.from(canonical, 'base64url'));
      assert.ok('values' in decodeCursor([KEY], canonical, '/orders', scope, TYPES));
      assert.deepEqual(decodeCursor([KEY], changed, '/orders', scope, TYPES), { error: MALFORMED });
    });
    it('a cursor sealed here that is longer than 512 characters, and takes the same one shorter', () => {
      const byStatus = scoped([asc('status')], {});
      const long = encodeCursor(KEY, '/orders', byStatus, ['é'.repeat(256), '7'], 2);
      assert.ok(long.length > 512, String(long.length));
      assert.deepEqual(decodeCursor([KEY], long, '/orders', byStatus, TYPES), { error: MALFORMED });
      const short = encodeCursor(KEY, '/orders', byStatus, ['é'.repeat(100), '7'], 2);
      assert.ok(short.length <= 512, String(short.length));
      assert.deepEqual(decodeCursor([KEY], short, '/orders', byStatus, TYPES), {
        values: ['é'.repeat(100), '7'],
        page: 2,
      });
    });
    it('refuses a cursor of another query sealed under another key as unopened: the seal first', () => {
      const elsewhere = encodeCursor(OTHER_KEY, '/orders', { ...scope, filters: {} }, values, 2);
      assert.deepEqual(decodeCursor([KEY], elsewhere, '/orders', scope, TYPES), unopened);
      assert.deepEqual(decodeCursor([OTHER_KEY], elsewhere, '/orders', scope, TYPES), { error: OTHER });
    });
  });

  describe('checks each value against its key type, as PostgreSQL would take it', () => {
    const check = (type: KeyType, value: string) => {
      const one = scoped([asc('v')], {});
      const types = { v: type, id: 'bigint' as const };
      return 'values' in decodeCursor([KEY], encodeCursor(KEY, '/x', one, [value, '1'], 2), '/x', one, types);
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
    const scope = { ...scoped([desc('total')], { status: 'paid' }), pageSize: 5 };
    const cursor = encodeCursor(KEY, '/orders', scope, ['12.50', '7'], 4);
    assert.deepEqual(parse(`status=paid&sort=-total&cursor=${cursor}&pageSize=5`), {
      ok: true,
      value: { page: 4, pageSize: 5, sort: [desc('total')], filters: { status: 'paid' }, after: ['12.50', '7'] },
    });
    assert.deepEqual(parse(`cursor=${cursor}&sort=-total,-id&status=paid&pageSize=5`), {
      ok: true,
      value: {
        page: 4,
        pageSize: 5,
        sort: [desc('total'), desc('id')],
        filters: { status: 'paid' },
        after: ['12.50', '7'],
      },
    });
    // Deeper than page reaches: the cursor's number is kept as it is.
    const deep = encodeCursor(KEY, '/orders', { ...scope, pageSize: 1 }, ['12.50', '7'], 10_002);
    assert.deepEqual(parse(`status=paid&sort=-total&cursor=${deep}&pageSize=1`), {
      ok: true,
      value: { page: 10_002, pageSize: 1, sort: [desc('total')], filters: { status: 'paid' }, after: ['12.50', '7'] },
    });
  });

  it('refuses a cursor with page, with another query, page size or client, on another collection, repeated', () => {
    const cursor = encodeCursor(KEY, '/orders', scoped([], {}), ['7'], 2);
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
      [`cursor=${cursor}&pageSize=21`, '/orders', [{ parameter: 'cursor', detail: OTHER }]],
      [`cursor=${cursor}&cursor=${cursor}`, '/orders', [{ parameter: 'cursor', detail: 'must be given once' }]],
      ['cursor=', '/orders', [{ parameter: 'cursor', detail: MALFORMED }]],
      // Sealed with another key, or changed: not a cursor this service made.
      [`cursor=${cursor.slice(0, -1)}`, '/orders', [{ parameter: 'cursor', detail: MALFORMED }]],
      // The rest of the query is wrong: the cursor is not checked against it.
      [`cursor=${cursor}&status=lost`, '/orders', [{ parameter: 'status', detail: 'must be pending or paid' }]],
    ];
    for (const [qs, collection, errors] of cases) {
      const parsed = parse(qs, collection);
      assert.deepEqual(parsed.ok ? parsed : { ok: false, errors: parsed.errors }, { ok: false, errors }, qs);
    }
    // Another client's cursor, and one sealed under a key this process does not hold (said, so it may read again).
    assert.deepEqual(parse(`cursor=${cursor}`, '/orders', 'user 8'), {
      ok: false,
      errors: [{ parameter: 'cursor', detail: OTHER }],
    });
    assert.deepEqual(parse(`cursor=${encodeCursor(OTHER_KEY, '/orders', scoped([], {}), ['7'], 2)}`), {
      ok: false,
      errors: [{ parameter: 'cursor', detail: MALFORMED }],
      unopened: true,
    });
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
    assert.deepEqual(
      pageStatement({ list: 'ListOrders', count: 'CountOrders', columns }, { pageSize: 20, order: byId, page: 3 }),
      {
        fragments: {
          where: 'TRUE',
          after: 'TRUE',
          orderBy: 'o.id ASC',
          sortKey: 'json_build_array(o.id::text)',
          limit: '$1',
          offset: '$2::bigint',
        },
        params: [21, '40'],
      },
    );
  });
  it('a cursor page: the keyset after the filters, and no OFFSET', () => {
    const sql: PageSql = {
      list: 'ListOrdersKeptTotal',
      count: 'SumOrderCounts',
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
