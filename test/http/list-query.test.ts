import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseListQuery, parseSort, type ListSpec } from '../../src/http/list-query.ts';
import { pageCount, paginationLinks } from '../../src/http/page-links.ts';
import { orderBy } from '../../src/db/sort-sql.ts';

type Key = 'id' | 'createdAt' | 'total';
const spec: ListSpec<Key, { status: string }> = {
  sortKeys: ['id', 'createdAt', 'total'],
  keyTypes: { id: 'bigint', createdAt: 'timestamptz', total: 'numeric' },
  filters: { status: (v) => (['pending', 'paid'].includes(v) ? { value: v } : { error: 'must be pending or paid' }) },
};
/** No cursor is parsed here (test/http/list-cursor.test.ts has them): any key will do. */
const KEY = new Uint8Array(32).fill(1);
const parse = (qs: string) =>
  parseListQuery(new URLSearchParams(qs), spec, '/orders', { keys: [KEY], principal: 'anyone' });

describe('parseListQuery()', () => {
  it('defaults to page 1 of 20 in the default order', () => {
    assert.deepEqual(parse(''), { ok: true, value: { page: 1, pageSize: 20, sort: [], filters: {} } });
  });

  it('reads page, pageSize, sort and filters', () => {
    assert.deepEqual(parse('page=3&pageSize=100&sort=-total,id&status=paid'), {
      ok: true,
      value: {
        page: 3,
        pageSize: 100,
        sort: [
          { key: 'total', descending: true },
          { key: 'id', descending: false },
        ],
        filters: { status: 'paid' },
      },
    });
  });

  describe('when a parameter is invalid', () => {
    const cases: [string, { parameter: string; detail: string }[]][] = [
      [
        'colour=red',
        [
          {
            parameter: 'colour',
            detail: 'is not a parameter of this collection; use page, pageSize, sort, cursor, status',
          },
        ],
      ],
      [
        'Page=2',
        [
          {
            parameter: 'Page',
            detail: 'is not a parameter of this collection; use page, pageSize, sort, cursor, status',
          },
        ],
      ],
      ['page=0', [{ parameter: 'page', detail: 'must be an integer of at least 1' }]],
      ['page=', [{ parameter: 'page', detail: 'must be an integer of at least 1' }]],
      ['page=1.0', [{ parameter: 'page', detail: 'must be an integer of at least 1' }]],
      ['page=01', [{ parameter: 'page', detail: 'must be an integer of at least 1' }]],
      ['page=-1', [{ parameter: 'page', detail: 'must be an integer of at least 1' }]],
      [
        'page=99999999999999999',
        [
          {
            parameter: 'page',
            detail:
              'must be at most 500 with pageSize 20: page reaches at most 10,000 rows deep; ' +
              "follow the next link's cursor to go further",
          },
        ],
      ],
      ['pageSize=0', [{ parameter: 'pageSize', detail: 'must be an integer from 1 to 100' }]],
      ['pageSize=101', [{ parameter: 'pageSize', detail: 'must be an integer from 1 to 100' }]],
      ['pageSize=ten', [{ parameter: 'pageSize', detail: 'must be an integer from 1 to 100' }]],
      ['page=2&page=3', [{ parameter: 'page', detail: 'must be given once' }]],
      ['sort=id&sort=id&sort=id', [{ parameter: 'sort', detail: 'must be given once' }]],
      ['sort=', [{ parameter: 'sort', detail: 'has an empty sort key' }]],
      ['sort=id,', [{ parameter: 'sort', detail: 'has an empty sort key' }]],
      ['sort=-', [{ parameter: 'sort', detail: 'has an empty sort key' }]],
      ['sort=name', [{ parameter: 'sort', detail: 'has the unknown sort key "name"; use id, createdAt, total' }]],
      ['sort=--id', [{ parameter: 'sort', detail: 'has the unknown sort key "-id"; use id, createdAt, total' }]],
      ['sort=id,-id', [{ parameter: 'sort', detail: 'names the sort key "id" more than once' }]],
      ['status=gone', [{ parameter: 'status', detail: 'must be pending or paid' }]],
      ['status=paid&status=paid', [{ parameter: 'status', detail: 'must be given once' }]],
    ];
    for (const [qs, errors] of cases) {
      it(`refuses ${qs}`, () => {
        assert.deepEqual(parse(qs), { ok: false, errors });
      });
    }

    it('lists every offending parameter at once', () => {
      const result = parse('page=0&pageSize=500&sort=name&foo=1&status=x');
      assert.deepEqual(result.ok === false && result.errors.map((e) => e.parameter), [
        'page',
        'pageSize',
        'sort',
        'foo',
        'status',
      ]);
    });

    it('does not mistake inherited object keys for filters', () => {
      const result = parse('constructor=1&toString=2&__proto__=3');
      assert.deepEqual(result.ok === false && result.errors.map((e) => e.parameter), [
        'constructor',
        'toString',
        '__proto__',
      ]);
    });
  });
});

describe('parseSort()', () => {
  it('keeps the order given', () => {
    assert.deepEqual(parseSort('createdAt,-id', ['id', 'createdAt']), {
      ok: true,
      value: [
        { key: 'createdAt', descending: false },
        { key: 'id', descending: true },
      ],
    });
  });
});

describe('orderBy()', () => {
  const columns = { id: 'o.id', createdAt: 'o.created_at', total: 'o.total' };
  it('defaults to id ascending', () => {
    assert.equal(orderBy([], columns), 'o.id ASC');
  });
  it('appends id as the tie-breaker, in the direction of the last key', () => {
    assert.equal(
      orderBy(
        [
          { key: 'total', descending: true },
          { key: 'createdAt', descending: false },
        ],
        columns,
      ),
      'o.total DESC, o.created_at ASC, o.id ASC',
    );
    assert.equal(
      orderBy(
        [
          { key: 'createdAt', descending: false },
          { key: 'total', descending: true },
        ],
        columns,
      ),
      'o.created_at ASC, o.total DESC, o.id DESC',
    );
  });
  it('does not repeat id when it was given', () => {
    assert.equal(
      orderBy(
        [
          { key: 'id', descending: true },
          { key: 'total', descending: false },
        ],
        columns,
      ),
      'o.id DESC, o.total ASC',
    );
  });
});

describe('pageCount()', () => {
  it('rounds up, and is 0 for an empty collection', () => {
    assert.equal(pageCount(0, 20), 0);
    assert.equal(pageCount(20, 20), 1);
    assert.equal(pageCount(21, 20), 2);
  });
});

describe('paginationLinks()', () => {
  const url = new URL('http://localhost/v1/products?sort=-id&pageSize=5&page=2');
  it('links first, prev, next (a cursor) and last, keeping the other parameters in their order', () => {
    assert.deepEqual(paginationLinks(url, { page: 2, pageSize: 5, pages: 4, cursor: 'abc' }), {
      header:
        '</v1/products?sort=-id&pageSize=5&page=1>; rel="first", ' +
        '</v1/products?sort=-id&pageSize=5&page=1>; rel="prev", ' +
        '</v1/products?sort=-id&pageSize=5&cursor=abc>; rel="next", ' +
        '</v1/products?sort=-id&pageSize=5&page=4>; rel="last"',
      next: '/v1/products?sort=-id&pageSize=5&cursor=abc',
    });
  });
  it('has no prev on the first page and no next on the last', () => {
    assert.deepEqual(paginationLinks(url, { page: 1, pageSize: 5, pages: 1 }), {
      header:
        '</v1/products?sort=-id&pageSize=5&page=1>; rel="first", </v1/products?sort=-id&pageSize=5&page=1>; rel="last"',
    });
  });
  it('points prev at the last page from a page past it', () => {
    assert.deepEqual(paginationLinks(url, { page: 9, pageSize: 5, pages: 4 }), {
      header:
        '</v1/products?sort=-id&pageSize=5&page=1>; rel="first", ' +
        '</v1/products?sort=-id&pageSize=5&page=4>; rel="prev", ' +
        '</v1/products?sort=-id&pageSize=5&page=4>; rel="last"',
    });
  });
  it('adds page or cursor when the request had neither', () => {
    assert.deepEqual(
      paginationLinks(new URL('http://localhost/products'), { page: 1, pageSize: 20, pages: 2, cursor: 'c' }),
      {
        header: '</products?page=1>; rel="first", </products?cursor=c>; rel="next", </products?page=2>; rel="last"',
        next: '/products?cursor=c',
      },
    );
  });
  it('on a cursor page: prev by the number its cursor carries, the next cursor in place of the last', () => {
    const deep = new URL('http://localhost/v2/orders?status=paid&cursor=old&pageSize=10');
    assert.deepEqual(paginationLinks(deep, { page: 5, pageSize: 10, pages: 12, cursor: 'new' }), {
      header:
        '</v2/orders?status=paid&pageSize=10&page=1>; rel="first", ' +
        '</v2/orders?status=paid&pageSize=10&page=4>; rel="prev", ' +
        '</v2/orders?status=paid&cursor=new&pageSize=10>; rel="next", ' +
        '</v2/orders?status=paid&pageSize=10&page=12>; rel="last"',
      next: '/v2/orders?status=paid&cursor=new&pageSize=10',
    });
    assert.deepEqual(
      paginationLinks(deep, { page: 2, pageSize: 10, pages: 12, cursor: 'new' }).header.split(', ')[1],
      '</v2/orders?status=paid&pageSize=10&page=1>; rel="prev"',
    );
  });
  it('on a cursor page deeper than page reaches: prev only while page reaches the page before', () => {
    const deep = new URL('http://localhost/orders?cursor=old&pageSize=100');
    // maxPage(100) is 100: the cursor page 101 has prev 100; the cursor page 102 has none.
    assert.deepEqual(paginationLinks(deep, { page: 101, pageSize: 100, pages: 150, cursor: 'new' }), {
      header:
        '</orders?pageSize=100&page=1>; rel="first", </orders?pageSize=100&page=100>; rel="prev", ' +
        '</orders?cursor=new&pageSize=100>; rel="next"',
      next: '/orders?cursor=new&pageSize=100',
    });
    assert.deepEqual(paginationLinks(deep, { page: 102, pageSize: 100, pages: 150, cursor: 'new' }), {
      header: '</orders?pageSize=100&page=1>; rel="first", </orders?cursor=new&pageSize=100>; rel="next"',
      next: '/orders?cursor=new&pageSize=100',
    });
    assert.deepEqual(paginationLinks(deep, { page: 151, pageSize: 100, pages: 150 }), {
      header: '</orders?pageSize=100&page=1>; rel="first"',
    });
  });
  it('leaves out last when it lies deeper than page reaches (10,000 rows)', () => {
    const orders = new URL('http://localhost/orders?pageSize=100');
    assert.deepEqual(
      paginationLinks(orders, { page: 1, pageSize: 100, pages: 100, cursor: 'c' }).header,
      '</orders?pageSize=100&page=1>; rel="first", </orders?pageSize=100&cursor=c>; rel="next", ' +
        '</orders?pageSize=100&page=100>; rel="last"',
    );
    assert.deepEqual(
      paginationLinks(orders, { page: 1, pageSize: 100, pages: 101, cursor: 'c' }).header,
      '</orders?pageSize=100&page=1>; rel="first", </orders?pageSize=100&cursor=c>; rel="next"',
    );
  });
});
