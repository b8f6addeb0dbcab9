import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createRouter, RouteDefinitionError, type Route } from '../../src/http/router.ts';

const routes: Route<string>[] = [
  { method: 'GET', pattern: '/orders', handler: 'listOrders' },
  { method: 'POST', pattern: '/orders', handler: 'createOrder' },
  { method: 'GET', pattern: '/orders/{id:int}', handler: 'getOrder' },
  { method: 'DELETE', pattern: '/orders/{id:int}', handler: 'deleteOrder' },
  { method: 'GET', pattern: '/users/{id:int}/orders', handler: 'userOrders' },
  { method: 'GET', pattern: '/users/me', handler: 'me' },
  { method: 'GET', pattern: '/files/{name}', handler: 'file' },
  { method: 'GET', pattern: '/healthz', handler: 'health', versioned: false },
];
const router = createRouter(routes);

describe('createRouter()', () => {
  describe('match()', () => {
    it('finds a literal route with no version', () => {
      assert.deepEqual(router.match('GET', '/orders'), {
        kind: 'found',
        handler: 'listOrders',
        params: {},
        version: undefined,
        pattern: '/orders',
        allow: 'GET, HEAD, POST, OPTIONS',
      });
    });

    it('hands the /v1 and /v2 prefixes over as the version', () => {
      const v1 = router.match('POST', '/v1/orders');
      const v2 = router.match('GET', '/v2/orders/7');
      assert.equal(v1.kind === 'found' && v1.handler, 'createOrder');
      assert.equal(v1.version, 1);
      assert.deepEqual(v2.kind === 'found' && [v2.handler, v2.params, v2.version], ['getOrder', { id: 7 }, 2]);
    });

    it('types int parameters as numbers', () => {
      const match = router.match('GET', '/users/12/orders');
      assert.deepEqual(match.kind === 'found' && match.params, { id: 12 });
    });

    it('keeps string parameters as strings', () => {
      const match = router.match('GET', '/files/report.pdf');
      assert.deepEqual(match.kind === 'found' && match.params, { name: 'report.pdf' });
    });

    it('prefers a literal segment to a parameter', () => {
      assert.equal(
        router.match('GET', '/users/me').kind === 'found' &&
          (router.match('GET', '/users/me') as { handler: string }).handler,
        'me',
      );
    });

    for (const id of ['0', '-1', '+1', '01', '1.5', '1e3', 'abc', '9007199254740992', '99999999999999999999', ' 1']) {
      it(`matches nothing for the id ${JSON.stringify(id)}`, () => {
        assert.equal(router.match('GET', `/orders/${id}`).kind, 'not-found');
      });
    }

    it('accepts the largest safe integer as an id', () => {
      const match = router.match('GET', '/orders/9007199254740991');
      assert.deepEqual(match.kind === 'found' && match.params, { id: 9007199254740991 });
    });

    for (const path of [
      '/',
      '',
      '/v1',
      '/v1/',
      '/v3/orders',
      '/orders/',
      '//orders',
      '/orders//7',
      '/orders/7/items',
      '/ORDERS',
      '/v1/v1/orders',
      '*',
      'orders',
      'x/orders',
      'example.com:443',
    ]) {
      it(`answers not-found for ${JSON.stringify(path)}`, () => {
        assert.equal(router.match('GET', path).kind, 'not-found');
      });
    }

    describe('when the raw path holds what URL parsing would rewrite', () => {
      // Each would name a route once its dot-segments were removed or its backslashes turned to slashes.
      for (const path of [
        '/files/..',
        '/files/.',
        '/files/%2e%2e',
        '/files/%2E%2E',
        '/files/.%2e',
        '/files/%2e.',
        '/files/%2e',
        '/v1/orders/../users/1',
        '/v1/orders/7/..',
        '/./orders',
        '/v1/./orders',
        '/v1/%2e/orders',
        '/orders/%2e%2e/orders',
        '/files/a\\b',
        '/v1\\orders',
        '/orders\\7',
        '\\orders',
      ]) {
        it(`answers not-found for ${JSON.stringify(path)}`, () => {
          assert.equal(router.match('GET', path).kind, 'not-found');
        });
      }

      for (const name of ['...', '..a', '.hidden', '%2e%2e%2e', 'a%5Cb']) {
        it(`still takes ${JSON.stringify(name)} as a segment, which is no dot-segment or backslash`, () => {
          const match = router.match('GET', `/files/${name}`);
          assert.deepEqual(match.kind === 'found' && match.params, { name });
        });
      }
    });

    it('answers method-not-allowed with the Allow list', () => {
      assert.deepEqual(router.match('PUT', '/orders/3'), {
        kind: 'method-not-allowed',
        allow: 'GET, HEAD, DELETE, OPTIONS',
        version: undefined,
        pattern: '/orders/{id:int}',
      });
    });

    it('answers an unknown method as not allowed', () => {
      assert.equal(router.match('BREW', '/orders').kind, 'method-not-allowed');
    });

    it('answers OPTIONS with the Allow list', () => {
      assert.deepEqual(router.match('OPTIONS', '/v1/orders'), {
        kind: 'options',
        allow: 'GET, HEAD, POST, OPTIONS',
        version: 1,
        pattern: '/orders',
      });
    });

    it('serves HEAD with the GET handler', () => {
      const match = router.match('HEAD', '/orders/1');
      assert.equal(match.kind === 'found' && match.handler, 'getOrder');
    });

    it('refuses a version prefix on an unversioned route', () => {
      assert.equal(router.match('GET', '/healthz').kind, 'found');
      assert.equal(router.match('GET', '/v1/healthz').kind, 'not-found');
    });

    describe('when the table has a route on "/"', () => {
      const rooted = createRouter<string>([
        ...routes,
        { method: 'GET', pattern: '/', handler: 'index', versioned: false },
      ]);

      it('finds it for the path "/" exactly, with no version', () => {
        assert.deepEqual(rooted.match('GET', '/'), {
          kind: 'found',
          handler: 'index',
          params: {},
          version: undefined,
          pattern: '/',
          allow: 'GET, HEAD, OPTIONS',
        });
      });

      it('serves HEAD with its GET handler, answers OPTIONS and refuses other methods with Allow', () => {
        assert.equal(
          rooted.match('HEAD', '/').kind === 'found' && (rooted.match('HEAD', '/') as { handler: string }).handler,
          'index',
        );
        assert.deepEqual(rooted.match('OPTIONS', '/'), {
          kind: 'options',
          allow: 'GET, HEAD, OPTIONS',
          version: undefined,
          pattern: '/',
        });
        assert.deepEqual(rooted.match('POST', '/'), {
          kind: 'method-not-allowed',
          allow: 'GET, HEAD, OPTIONS',
          version: undefined,
          pattern: '/',
        });
      });

      it('keeps the other routes as they were', () => {
        assert.equal(
          rooted.match('GET', '/v2/orders/7').kind === 'found' &&
            (rooted.match('GET', '/v2/orders/7') as { handler: string }).handler,
          'getOrder',
        );
        assert.equal(rooted.match('GET', '/healthz').kind, 'found');
      });

      // The root is no prefix of anything: a bare version, an empty segment or a dot-segment still names nothing.
      for (const path of [
        '',
        '/v1',
        '/v2',
        '/v1/',
        '/v2/',
        '//',
        '///',
        '/.',
        '/..',
        '/%2e',
        '/%2E%2E',
        '/./',
        '/\\',
        '\\',
        '/v1/.',
        '/index',
        '*',
        'x',
      ]) {
        it(`answers not-found for ${JSON.stringify(path)}`, () => {
          assert.deepEqual(rooted.match('GET', path), {
            kind: 'not-found',
            version: path.startsWith('/v1') ? 1 : path.startsWith('/v2') ? 2 : undefined,
          });
        });
      }
    });
  });

  describe('at set-up', () => {
    const bad: [string, Route<string>[], string][] = [
      [
        'a duplicate route',
        [
          { method: 'GET', pattern: '/a', handler: 'x' },
          { method: 'GET', pattern: '/a', handler: 'y' },
        ],
        'duplicate route GET /a',
      ],
      [
        'a pattern without a leading slash',
        [{ method: 'GET', pattern: 'a', handler: 'x' }],
        'pattern must start with "/": a',
      ],
      ['an empty segment', [{ method: 'GET', pattern: '/a//b', handler: 'x' }], 'empty segment in /a//b'],
      [
        'conflicting parameters',
        [
          { method: 'GET', pattern: '/a/{id:int}', handler: 'x' },
          { method: 'GET', pattern: '/a/{name}', handler: 'y' },
        ],
        'conflicting parameters {id} and {name} in /a/{name}',
      ],
      [
        'a malformed parameter',
        [{ method: 'GET', pattern: '/a/{id:float}', handler: 'x' }],
        'malformed segment {id:float} in /a/{id:float}',
      ],
      ['a version segment', [{ method: 'GET', pattern: '/v1/a', handler: 'x' }], '/v1/a starts with a version segment'],
      ['an unknown method', [{ method: 'BREW' as 'GET', pattern: '/a', handler: 'x' }], 'unknown method BREW for /a'],
      [
        'a versioned route on "/"',
        [{ method: 'GET', pattern: '/', handler: 'x' }],
        'GET / takes no version prefix: declare it versioned: false',
      ],
      [
        'an empty segment after "/"',
        [{ method: 'GET', pattern: '//', handler: 'x', versioned: false }],
        'empty segment in //',
      ],
    ];
    for (const [what, table, message] of bad) {
      it(`throws a RouteDefinitionError for ${what}`, () => {
        assert.throws(
          () => createRouter(table),
          (error: unknown) => error instanceof RouteDefinitionError && error.message === message,
        );
      });
    }
  });
});
