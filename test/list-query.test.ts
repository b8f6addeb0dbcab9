import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pageCount, paginationLinks, parseListQuery, parseSort, type ListSpec } from '../src/http/list-query.ts';
import { orderBy } from '../src/db/page.ts';

type Key = 'id' | 'createdAt' | 'total';
const spec: ListSpec<Key, { status: string }> = {
  sortKeys: ['id', 'createdAt', 'total'],
  filters: { status: (v) => (['pending', 'paid'].includes(v) ? { value: v } : { error: 'must be pending or paid' }) },
};
const parse = (qs: string) => parseListQuery(new URLSearchParams(qs), spec);

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
        [{ parameter: 'colour', detail: 'is not a parameter of this collection; use page, pageSize, sort, status' }],
      ],
      [
        'Page=2',
        [{ parameter: 'Page', detail: 'is not a parameter of this collection; use page, pageSize, sort, status' }],
      ],
      ['page=0', [{ parameter: 'page', detail: 'must be an integer of at least 1' }]],
      ['page=', [{ parameter: 'page', detail: 'must be an integer of at least 1' }]],
      ['page=1.0', [{ parameter: 'page', detail: 'must be an integer of at least 1' }]],
      ['page=01', [{ parameter: 'page', detail: 'must be an integer of at least 1' }]],
      ['page=99999999999999999', [{ parameter: 'page', detail: 'must be an integer of at least 1' }]],
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
  it('links first, prev, next and last, keeping the other parameters', () => {
    assert.equal(
      paginationLinks(url, 2, 4),
      '</v1/products?sort=-id&pageSize=5&page=1>; rel="first", ' +
        '</v1/products?sort=-id&pageSize=5&page=1>; rel="prev", ' +
        '</v1/products?sort=-id&pageSize=5&page=3>; rel="next", ' +
        '</v1/products?sort=-id&pageSize=5&page=4>; rel="last"',
    );
  });
  it('has no prev on the first page and no next on the last', () => {
    assert.equal(
      paginationLinks(url, 1, 1),
      '</v1/products?sort=-id&pageSize=5&page=1>; rel="first", </v1/products?sort=-id&pageSize=5&page=1>; rel="last"',
    );
  });
  it('points prev at the last page from a page past it', () => {
    assert.equal(
      paginationLinks(url, 9, 4),
      '</v1/products?sort=-id&pageSize=5&page=1>; rel="first", ' +
        '</v1/products?sort=-id&pageSize=5&page=4>; rel="prev", ' +
        '</v1/products?sort=-id&pageSize=5&page=4>; rel="last"',
    );
  });
  it('adds page when the request had none', () => {
    assert.equal(
      paginationLinks(new URL('http://localhost/products'), 1, 2),
      '</products?page=1>; rel="first", </products?page=2>; rel="next", </products?page=2>; rel="last"',
    );
  });
});
