/**
 * A property-based test of the §4 query rules (fast-check): random parameter
 * sets are either accepted and turned into SQL made only of whitelisted
 * parts, or rejected naming exactly each bad parameter. The oracle below
 * restates contract §4 independently of the parser.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseListQuery } from '../src/http/list-query.ts';
import { ORDER_LIST, orderListSql } from '../src/orders/orders.ts';

const NAMES = ['page', 'pageSize', 'sort', 'status', 'customerId', 'minTotal'];
const SORT_KEYS = ['id', 'status', 'createdAt', 'updatedAt', 'total'];
const STATUSES = ['pending', 'paid', 'shipped', 'delivered', 'cancelled'];

const positiveInt = (v: string, max: number) => /^[1-9][0-9]*$/.test(v) && v.length <= 16 && Number(v) <= max;

/** contract §4, restated: is this one value of this parameter acceptable? */
function validValue(name: string, value: string): boolean {
  switch (name) {
    case 'page':
      return positiveInt(value, Number.MAX_SAFE_INTEGER);
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

function badParameters(pairs: readonly [string, string][]): Set<string> {
  const bad = new Set<string>();
  const count = new Map<string, number>();
  for (const [name] of pairs) count.set(name, (count.get(name) ?? 0) + 1);
  for (const [name, value] of pairs) {
    if (!NAMES.includes(name) || (count.get(name) ?? 0) > 1) bad.add(name);
    else if (!validValue(name, value)) bad.add(name);
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
  sortValue,
  fc.string({ maxLength: 12 }),
);
const name = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...NAMES) },
  { weight: 1, arbitrary: fc.constantFrom('limit', 'orderId', 'Page', 'sort ', '__proto__', 'constructor') },
  { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
);
const pairs = fc.array(fc.tuple(name, value), { maxLength: 7 });

const WHERE_PART = /^(o\.customer_id = \$\d+|o\.status = \$\d+|o\.total >= \$\d+::numeric)$/;
const ORDER_PART = /^o\.(id|status|created_at|updated_at|total) (ASC|DESC)$/;

describe('parseListQuery() with the orders spec, on random query strings', () => {
  it('accepts exactly the valid ones, building SQL from whitelisted parts only; else names each bad parameter', () => {
    fc.assert(
      fc.property(pairs, fc.option(fc.integer({ min: 1, max: 1000 }), { nil: undefined }), (given, owner) => {
        const search = new URLSearchParams();
        for (const [n, v] of given) search.append(n, v);
        // Round-trip through the query-string text, as a request would.
        const parsed = parseListQuery(new URLSearchParams(search.toString()), ORDER_LIST);
        const bad = badParameters([...new URLSearchParams(search.toString())] as [string, string][]);
        if (!parsed.ok) {
          assert.deepEqual(new Set(parsed.errors.map((e) => e.parameter)), bad);
          for (const error of parsed.errors) assert.ok(error.detail.length > 0);
          return;
        }
        assert.equal(bad.size, 0, `accepted ${search.toString()} with bad ${[...bad].join(',')}`);
        const sql = orderListSql(parsed.value, owner === undefined ? [] : [owner]);
        const parts = sql.where === 'TRUE' ? [] : sql.where.split(' AND ');
        for (const part of parts) assert.match(part, WHERE_PART);
        assert.deepEqual(
          parts.map((p) => Number(/\$(\d+)/.exec(p)![1])),
          parts.map((_, i) => i + 1),
        );
        assert.equal(sql.params.length, parts.length);
        const order = sql.orderBy.split(', ');
        for (const part of order) assert.match(part, ORDER_PART);
        assert.ok(
          order.some((p) => p.startsWith('o.id ')),
          'id breaks ties',
        );
      }),
      { numRuns: 3000 },
    );
  });
});
