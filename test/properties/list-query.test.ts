/**
 * A property-based test of the §4 query rules (fast-check): random parameter
 * sets are either accepted and turned into SQL made only of whitelisted
 * parts, or rejected naming exactly each bad parameter. The oracle below
 * restates contract §4 independently of the parser, the depth `page`
 * reaches and the cursor's binding to the filters and the sort included.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseListQuery } from '../../src/http/list-query.ts';
import { encodeCursor } from '../../src/http/cursor.ts';
import { sortOrder } from '../../src/http/sort-order.ts';
import { pageStatement } from '../../src/db/page.ts';
import { ORDER_LIST, orderListSql } from '../../src/orders/order-list.ts';

const NAMES = ['page', 'pageSize', 'sort', 'status', 'customerId', 'minTotal', 'cursor'];
const SORT_KEYS = ['id', 'status', 'createdAt', 'updatedAt', 'total'];
const STATUSES = ['pending', 'paid', 'shipped', 'delivered', 'cancelled'];

const positiveInt = (v: string, max: number) => /^[1-9][0-9]*$/.test(v) && v.length <= 16 && Number(v) <= max;

/** contract §4, restated: is this one value of this parameter acceptable? */
function validValue(name: string, value: string): boolean {
  switch (name) {
    case 'page':
      return /^[1-9][0-9]*$/.test(value);
    case 'cursor':
      // Its rules need the rest of the query: badParameters() below.
      return true;
    case 'pageSize':
      return positiveInt(value, 100);
    case 'status':
      return STATUSES.includes(value);
    case 'customerId':
      return positiveInt(value, Number.MAX_SAFE_INTEGER);
    case 'minTotal':
      return /^[0-9]{1,10}(\.[0-9]{1,2})?$/.test(value);
    case 'sort': {
      const keys = value.split(',').map((k) => (k.startsWith('-') ? k.slice(1) : k));
      return keys.every((k) => SORT_KEYS.includes(k)) && new Set(keys).size === keys.length;
    }
    default:
      return false;
  }
}

/** The key the parser checks cursors with, and another one. */
const KEY = new Uint8Array(32).fill(1);
const OTHER_KEY = new Uint8Array(32).fill(2);
const COLLECTION = '/orders';

/** Who asks: every cursor below was given to this client, with the default page size. */
const PRINCIPAL = 'user 7';
const made = (sort: { key: string; descending: boolean }[], filters: Record<string, unknown>) => ({
  sort,
  filters,
  pageSize: 20,
  principal: PRINCIPAL,
});

/**
 * Cursors made for known queries: `order` is the order (id ended) and `filters` the filters each was made for
 * (with page size 20), `page` the page number it carries.
 */
const CURSORS = [
  { text: encodeCursor(KEY, COLLECTION, made([], {}), ['5'], 2), order: 'id', filters: '', page: 2 },
  {
    text: encodeCursor(
      KEY,
      COLLECTION,
      made([{ key: 'total', descending: true }], { status: 'paid' }),
      ['12.50', '7'],
      3,
    ),
    order: '-total,-id',
    filters: 'status=paid',
    page: 3,
  },
  // A value of the wrong type (a total that is no decimal): refused whatever the query.
  { text: encodeCursor(KEY, COLLECTION, made([], {}), ['x'], 2), order: '', filters: '', page: 2 },
  // Sealed under another key: refused whatever the query.
  { text: encodeCursor(OTHER_KEY, COLLECTION, made([], {}), ['5'], 2), order: '', filters: '', page: 2 },
];

/** contract §4, restated: the order a valid sort gives, as text: its keys up to id, which ends it. */
function orderOf(sort: string | undefined): string {
  const keys = sort === undefined ? [] : sort.split(',');
  const id = keys.findIndex((k) => k === 'id' || k === '-id');
  if (id >= 0) return keys.slice(0, id + 1).join(',');
  return [...keys, keys.at(-1)?.startsWith('-') ? '-id' : 'id'].join(',');
}

function badParameters(pairs: readonly [string, string][]): Set<string> {
  const bad = new Set<string>();
  const count = new Map<string, number>();
  for (const [name] of pairs) count.set(name, (count.get(name) ?? 0) + 1);
  const first = (name: string) => pairs.find(([n]) => n === name)?.[1];
  for (const [name, value] of pairs) {
    if (!NAMES.includes(name) || (count.get(name) ?? 0) > 1) bad.add(name);
    else if (!validValue(name, value)) bad.add(name);
  }
  // page reaches at most 10,000 rows deep, with the pageSize in force (the first one, when valid).
  const page = first('page');
  const size = first('pageSize');
  const pageSize = size !== undefined && validValue('pageSize', size) ? Number(size) : 20;
  if (page !== undefined && validValue('page', page) && (Number(page) - 1) * pageSize >= 10_000) bad.add('page');
  // A cursor given once: refused with page; else checked only when the rest of the query is valid.
  const cursor = first('cursor');
  if (cursor !== undefined && count.get('cursor') === 1) {
    if (count.has('page')) bad.add('cursor');
    else if (bad.size === 0) {
      const filters = pairs
        .filter(([n]) => ['status', 'customerId', 'minTotal'].includes(n))
        .map(([n, v]) => `${n}=${v}`)
        .sort()
        .join('&');
      const given = CURSORS.find((c) => c.text === cursor);
      if (given === undefined || given.order !== orderOf(first('sort')) || given.filters !== filters || pageSize !== 20)
        bad.add('cursor');
    }
  }
  return bad;
}

const sortValue = fc
  .array(fc.tuple(fc.boolean(), fc.constantFrom(...SORT_KEYS, '', 'price', 'ID')), { minLength: 1, maxLength: 6 })
  .map((keys) => keys.map(([desc, key]) => (desc ? '-' : '') + key).join(','));
const value = fc.oneof(
  fc.constantFrom(
    ...STATUSES,
    '0',
    '1',
    '20',
    '100',
    '101',
    '12.50',
    '-1',
    '1e3',
    '',
    ' ',
    '9007199254740993',
    '00',
    'NaN',
  ),
  fc.integer({ min: -5, max: 200 }).map(String),
  fc.integer({ min: 400, max: 10_001 }).map(String),
  sortValue,
  fc.constantFrom('-total', '-total,-id', 'id', 'id,total', '-total,id'),
  fc.constantFrom(...CURSORS.map((c) => c.text), 'eyJ2IjoxfQ', 'not a cursor'),
  fc.string({ maxLength: 12 }),
);
const name = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...NAMES) },
  { weight: 1, arbitrary: fc.constantFrom('limit', 'orderId', 'Page', 'sort ', '__proto__', 'constructor') },
  { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
);
const randomPairs = fc.array(fc.tuple(name, value), { maxLength: 7 });
/** Queries around the cursors above: as made, or with a filter, the sort, page or pageSize changed. */
const cursorPairs = fc
  .tuple(
    fc.constantFrom(...CURSORS.map((c) => c.text)),
    fc.subarray([
      ['status', 'paid'],
      ['sort', '-total'],
      ['pageSize', '5'],
    ] as [string, string][]),
    fc.array(fc.tuple(fc.constantFrom('status', 'sort', 'page', 'minTotal'), value), { maxLength: 1 }),
  )
  .map(([cursor, kept, changed]): [string, string][] => [['cursor', cursor], ...kept, ...changed]);
const pairs = fc.oneof(randomPairs, cursorPairs);

const WHERE_PART = /^(o\.customer_id = \$\d+|o\.status = \$\d+|o\.total >= \$\d+::numeric)$/;
const ORDER_PART = /^o\.(id|status|created_at|updated_at|total) (ASC|DESC)$/;
/** What a keyset condition is made of: the sort columns, cast parameters, comparisons, AND, OR, parentheses. */
const KEYSET_TOKEN =
  /o\.(id|status|created_at|updated_at|total)|\$\d+::(bigint|numeric|text::timestamptz|text)|[<>]=?|=|AND|OR|[(), ]/g;

describe('parseListQuery() with the orders spec, on random query strings', () => {
  it('accepts exactly the valid ones, building SQL from whitelisted parts only; else names each bad parameter', () => {
    let cursorPages = 0;
    fc.assert(
      fc.property(pairs, fc.option(fc.integer({ min: 1, max: 1000 }), { nil: undefined }), (given, owner) => {
        const search = new URLSearchParams();
        for (const [n, v] of given) search.append(n, v);
        // Round-trip through the query-string text, as a request would.
        const parsed = parseListQuery(new URLSearchParams(search.toString()), ORDER_LIST, COLLECTION, {
          keys: [KEY],
          principal: PRINCIPAL,
        });
        const bad = badParameters([...new URLSearchParams(search.toString())] as [string, string][]);
        if (!parsed.ok) {
          assert.deepEqual(new Set(parsed.errors.map((e) => e.parameter)), bad);
          for (const error of parsed.errors) assert.ok(error.detail.length > 0);
          return;
        }
        assert.equal(bad.size, 0, `accepted ${search.toString()} with bad ${[...bad].join(',')}`);
        const query = parsed.value;
        const sql = orderListSql(query, owner === undefined ? [] : [owner]);
        const parts = sql.where === 'TRUE' ? [] : sql.where.split(' AND ');
        for (const part of parts) assert.match(part, WHERE_PART);
        assert.deepEqual(
          parts.map((p) => Number(/\$(\d+)/.exec(p)![1])),
          parts.map((_, i) => i + 1),
        );
        assert.equal(sql.params.length, parts.length);
        const keys = sortOrder(query.sort).map((k) => ({ ...k, type: ORDER_LIST.keyTypes[k.key] }));
        if (query.after !== undefined) {
          cursorPages += 1;
          // A cursor page is numbered by its cursor.
          const cursor = search.get('cursor');
          assert.equal(query.page, CURSORS.find((c) => c.text === cursor)?.page);
        } else assert.equal(query.page, Number(search.get('page') ?? 1));
        const position = query.after === undefined ? { page: query.page } : { after: query.after };
        const { fragments, params } = pageStatement(sql, { pageSize: query.pageSize, order: keys, ...position });
        // A cursor's values are parameters after the filters', and its keyset only whitelisted parts.
        const pinned = sql.pinned ?? [];
        const values = (query.after ?? []).filter((_, i) => !pinned.includes(keys[i]!.key));
        assert.deepEqual(params.slice(parts.length, parts.length + values.length), values);
        assert.equal(fragments.after!.replace(KEYSET_TOKEN, ''), query.after === undefined ? 'TRUE' : '');
        assert.equal(fragments.offset, query.after === undefined ? `$${params.length}::bigint` : '0');
        const order = fragments.orderBy!.split(', ');
        for (const part of order) assert.match(part, ORDER_PART);
        assert.ok(
          order.some((p) => p.startsWith('o.id ')),
          'id breaks ties',
        );
      }),
      { numRuns: 3000 },
    );
    // The valid cursors above were accepted, and their keysets checked, some of the time.
    assert.ok(cursorPages > 0, 'no cursor page was accepted');
  });
});
