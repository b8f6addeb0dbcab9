/** The public product catalog (contract §2, §4) over HTTP. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodeCursor } from '../../src/http/cursor.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let t: TestServer;
before(async () => {
  t = await startTestServer();
});
after(async () => {
  await t.close();
});

interface ProductV1 {
  id: number;
  sku: string;
  name: string;
  price: number;
  currency: string;
  createdAt: string;
}
interface Envelope<T> {
  data: T[];
  meta: { total: number; page: number; pageSize: number; pageCount: number; next?: string };
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('GET /products', () => {
  it('answers the envelope without a token, in id order, 20 a page', async () => {
    const response = await t.fetch('/v1/products');
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'application/json');
    const body = (await response.json()) as Envelope<ProductV1>;
    // The next page by cursor (contract §4): page 2, after product 20, in the default order.
    const cursor = new URL(body.meta.next as string, t.url).searchParams.get('cursor') as string;
    const scope = { sort: [], filters: {}, pageSize: 20, principal: 'anyone' };
    assert.deepEqual(decodeCursor([await t.cursorKey()], cursor, '/products', scope, { id: 'bigint' }), {
      values: ['20'],
      page: 2,
    });
    assert.deepEqual(body.meta, {
      total: 21,
      page: 1,
      pageSize: 20,
      pageCount: 2,
      next: `/v1/products?cursor=${cursor}`,
    });
    assert.equal(body.data.length, 20);
    assert.deepEqual(
      body.data.map((p) => p.id),
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
    assert.deepEqual(Object.keys(body.data[0]!), ['id', 'sku', 'name', 'price', 'currency', 'createdAt']);
    assert.deepEqual(
      { ...body.data[2]!, createdAt: 'x' },
      { id: 3, sku: 'TEE-001', name: 'Organic cotton T-shirt', price: 19.95, currency: 'EUR', createdAt: 'x' },
    );
    assert.match(body.data[0]!.createdAt, TIMESTAMP);
    assert.equal(
      response.headers.get('link'),
      `</v1/products?page=1>; rel="first", </v1/products?cursor=${cursor}>; rel="next", ` +
        '</v1/products?page=2>; rel="last", </v2/products>; rel="successor-version"',
    );
  });

  it('numbers the cursor page its next link leads to, and links prev to the page before it', async () => {
    const first = (await (await t.fetch('/v1/products')).json()) as Envelope<ProductV1>;
    const response = await t.fetch(first.meta.next as string);
    assert.equal(response.status, 200);
    const body = (await response.json()) as Envelope<ProductV1>;
    assert.deepEqual(
      body.data.map((p) => p.id),
      [21],
    );
    assert.deepEqual(body.meta, { total: 21, page: 2, pageSize: 20, pageCount: 2 });
    assert.equal(
      response.headers.get('link'),
      '</v1/products?page=1>; rel="first", </v1/products?page=1>; rel="prev", ' +
        '</v1/products?page=2>; rel="last", </v2/products>; rel="successor-version"',
    );
  });

  it('serves the unversioned path as version 1', async () => {
    const body = (await (await t.fetch('/products?pageSize=1')).json()) as Envelope<ProductV1>;
    assert.equal(body.data[0]!.price, 12.5);
    assert.equal(body.data[0]!.currency, 'EUR');
  });

  it('serves version 2 with price as a money object', async () => {
    const body = (await (await t.fetch('/v2/products?pageSize=1&page=3')).json()) as Envelope<Record<string, unknown>>;
    assert.deepEqual(body.data[0]!.price, { amount: '19.95', currency: 'EUR' });
    assert.equal('currency' in body.data[0]!, false);
  });

  it('walks every page exactly once', async () => {
    const seen: number[] = [];
    for (let page = 1; page <= 5; page++) {
      const body = (await (await t.fetch(`/v1/products?pageSize=5&page=${page}`)).json()) as Envelope<ProductV1>;
      assert.equal(body.meta.pageCount, 5);
      seen.push(...body.data.map((p) => p.id));
    }
    assert.deepEqual(
      seen,
      Array.from({ length: 21 }, (_, i) => i + 1),
    );
  });

  it('links prev and last from the last page, without next', async () => {
    const response = await t.fetch('/v1/products?pageSize=10&page=3');
    assert.equal(
      response.headers.get('link'),
      '</v1/products?pageSize=10&page=1>; rel="first", </v1/products?pageSize=10&page=2>; rel="prev", ' +
        '</v1/products?pageSize=10&page=3>; rel="last", </v2/products>; rel="successor-version"',
    );
  });

  it('answers a page past the last with 200 and empty data', async () => {
    const response = await t.fetch('/v1/products?page=50');
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { data: [], meta: { total: 21, page: 50, pageSize: 20, pageCount: 2 } });
  });

  it('sorts by -id', async () => {
    const body = (await (await t.fetch('/v1/products?sort=-id&pageSize=3')).json()) as Envelope<ProductV1>;
    assert.deepEqual(
      body.data.map((p) => p.id),
      [21, 20, 19],
    );
  });

  it('sorts by createdAt with id breaking the ties', async () => {
    // The seed inserts every product in one statement: all share created_at.
    const asc = (await (await t.fetch('/v1/products?sort=createdAt&pageSize=100')).json()) as Envelope<ProductV1>;
    assert.deepEqual(
      asc.data.map((p) => p.id),
      Array.from({ length: 21 }, (_, i) => i + 1),
    );
    // The tie-breaker runs in the direction of the last key.
    const desc = (await (await t.fetch('/v1/products?sort=-createdAt&pageSize=100')).json()) as Envelope<ProductV1>;
    assert.deepEqual(
      desc.data.map((p) => p.id),
      Array.from({ length: 21 }, (_, i) => 21 - i),
    );
    const descAsc = (await (await t.fetch('/v1/products?sort=-createdAt,id&pageSize=3')).json()) as Envelope<ProductV1>;
    assert.deepEqual(
      descAsc.data.map((p) => p.id),
      [1, 2, 3],
    );
    const descId = (await (await t.fetch('/v1/products?sort=-createdAt,-id&pageSize=3')).json()) as Envelope<ProductV1>;
    assert.deepEqual(
      descId.data.map((p) => p.id),
      [21, 20, 19],
    );
  });

  describe('answers 400 invalid-query', () => {
    const cases: [string, string[]][] = [
      ['status=paid', ['status']],
      ['sort=price', ['sort']],
      ['sort=id,id', ['sort']],
      ['sort=', ['sort']],
      ['page=0', ['page']],
      ['page=abc', ['page']],
      ['pageSize=101', ['pageSize']],
      ['pageSize=1&pageSize=2', ['pageSize']],
      ['page=0&pageSize=0&sort=name&q=mug', ['page', 'pageSize', 'sort', 'q']],
    ];
    for (const [qs, parameters] of cases) {
      it(`for ${qs}`, async () => {
        const response = await t.fetch(`/v1/products?${qs}`);
        assert.equal(response.status, 400);
        assert.equal(response.headers.get('content-type'), 'application/problem+json');
        const body = (await response.json()) as { type: string; errors: { parameter: string; detail: string }[] };
        assert.equal(body.type, '/problems/invalid-query');
        assert.deepEqual(
          body.errors.map((e) => e.parameter),
          parameters,
        );
        for (const error of body.errors) assert.ok(error.detail.length > 0);
      });
    }
  });
});

describe('GET /products/{id}', () => {
  it('answers one product in the same shape as in the collection', async () => {
    const one = (await (await t.fetch('/v1/products/7')).json()) as ProductV1;
    const list = (await (await t.fetch('/v1/products?pageSize=1&page=7')).json()) as Envelope<ProductV1>;
    assert.deepEqual(one, list.data[0]);
    assert.equal(one.sku, 'BAG-002');
    assert.equal(one.price, 89);
  });

  it('answers v2 with a money object', async () => {
    const body = await (await t.fetch('/v2/products/8')).json();
    assert.deepEqual(body.price, { amount: '9.90', currency: 'EUR' });
  });

  it('answers 404 not-found for a missing product', async () => {
    const response = await t.fetch('/v1/products/999999');
    assert.equal(response.status, 404);
    const body = await response.json();
    assert.equal(body.type, '/problems/not-found');
    assert.equal(body.detail, 'There is no product 999999.');
  });
});
