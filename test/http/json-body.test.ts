/** Request bodies: the nesting limit of contract §11 and bodies that are not objects (§4), as pure functions. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fingerprint } from '../../src/http/idempotency-key.ts';
import { checkContentEncoding, parseJson, validate } from '../../src/http/json-body.ts';
import {
  jsonNesting,
  MAX_JSON_ELEMENTS,
  MAX_JSON_VALUES,
  scanJson,
  MAX_JSON_DEPTH,
  memberSource,
} from '../../src/http/json-scan.ts';
import { HttpError } from '../../src/http/problem.ts';
import { CreateOrderSchema, PatchOrderSchema } from '../../src/orders/rules.ts';

const bytes = (text: string) => new TextEncoder().encode(text);
/** `levels` arrays, one inside the other. */
const nested = (levels: number, inner = '') => '['.repeat(levels) + inner + ']'.repeat(levels);
const DEEP_DETAIL =
  'The request body is nested deeper than 32 levels of arrays and objects, the most this service accepts.';

/** The HttpError `fn` throws, or a failure. */
function thrown(fn: () => unknown): HttpError {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof HttpError, String(error));
    return error;
  }
  assert.fail('expected an HttpError');
}

describe('jsonNesting()', () => {
  const cases: [string, string, number][] = [
    ['a scalar', '1', 0],
    ['an empty object', '{}', 1],
    ['an object in an array', '[{"a":1}]', 2],
    ['siblings, not nesting', '[[],[],{"a":1},[]]', 2],
    ['brackets inside a string', '{"a":"[[[{{{"}', 1],
    ['an escaped quote inside a string', '["\\"[[[["]', 1],
    ['an escaped backslash before the closing quote', '["\\\\",[[]]]', 3],
    ['a \\u escape', '["\\u005b[[",[]]', 2],
    ['closers past the opening ones', ']]]][[', 2],
    ['100,000 levels', nested(100_000), 100_000],
  ];
  for (const [what, text, depth] of cases) {
    it(`measures ${what} as ${depth}`, () => {
      assert.equal(jsonNesting(text), depth);
    });
  }
});

describe('parseJson()', () => {
  it(`accepts ${MAX_JSON_DEPTH} levels`, () => {
    assert.equal(MAX_JSON_DEPTH, 32);
    assert.deepEqual(parseJson(bytes(`{"a":${nested(31, '1')}}`)), { a: JSON.parse(nested(31, '1')) });
  });

  it('refuses 33 levels with 400 malformed-json naming the limit', () => {
    for (const text of [nested(33), `{"a":${nested(32)}}`, `{"a":{"b":${nested(31, '{}')}}}`]) {
      const error = thrown(() => parseJson(bytes(text)));
      assert.equal(error.status, 400);
      assert.equal(error.slug, 'malformed-json');
      assert.equal(error.init.detail, DEEP_DETAIL);
    }
  });

  it('refuses 100,000 levels with the same 400, also when the text is not balanced', () => {
    for (const text of [
      nested(100_000),
      '['.repeat(100_000),
      `{"a":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}`,
    ]) {
      const error = thrown(() => parseJson(bytes(text)));
      assert.equal(error.slug, 'malformed-json');
      assert.equal(error.init.detail, DEEP_DETAIL);
    }
  });

  it('does not count brackets inside strings', () => {
    assert.deepEqual(parseJson(bytes(JSON.stringify({ a: '['.repeat(1000) }))), { a: '['.repeat(1000) });
  });
});

describe('validate() on a body that is not a JSON object', () => {
  const cases: [string, unknown, string][] = [
    ['[]', [], 'an array'],
    ['[1]', [1], 'an array'],
    ['1', 1, 'a number'],
    ['""', '', 'a string'],
    ['true', true, 'a boolean'],
    ['null', null, 'null'],
  ];
  for (const [name, schema] of [
    ['PatchOrder', PatchOrderSchema],
    ['CreateOrder', CreateOrderSchema],
  ] as const) {
    for (const [text, value, kind] of cases) {
      it(`${name} refuses ${text} with 422: the body must be a JSON object`, () => {
        const error = thrown(() => validate(schema, value));
        assert.equal(error.status, 422);
        assert.equal(error.slug, 'validation');
        assert.equal(error.init.detail, `The request body must be a JSON object, not ${kind}.`);
        assert.deepEqual(error.init.errors, [{ pointer: '', detail: `must be a JSON object, not ${kind}` }]);
      });
    }
  }

  it('names an array where an item object belongs once, at the array', () => {
    const error = thrown(() => validate(CreateOrderSchema, { items: [[], [1], 7, { productId: 1, qty: 1 }] }));
    assert.deepEqual(error.init.errors, [
      { pointer: '/items/0', detail: 'must be a JSON object, not an array' },
      { pointer: '/items/1', detail: 'must be a JSON object, not an array' },
      { pointer: '/items/2', detail: 'must be a JSON object, not a number' },
    ]);
    assert.equal(error.init.detail, 'The request body is invalid at /items/0, /items/1, /items/2.');
  });

  it('still accepts an empty merge patch object', () => {
    assert.deepEqual(validate(PatchOrderSchema, {}), {});
  });
});

describe('validate() on the same error twice', () => {
  it('lists it once: qty 1e309 (Infinity) fails two rules with one message', () => {
    const error = thrown(() => validate(CreateOrderSchema, JSON.parse('{"items":[{"productId":1,"qty":1e309}]}')));
    assert.deepEqual(error.init.errors, [{ pointer: '/items/0/qty', detail: 'must be an integer from 1 to 1000' }]);
  });
});

describe('fingerprint() of a body nested past the limit', () => {
  it('counts it by its bytes, without walking it', () => {
    // Within the limit, whitespace does not change the fingerprint (the body is canonicalized) ...
    assert.equal(
      fingerprint('POST', '/orders', bytes(nested(32))),
      fingerprint('POST', '/orders', bytes(` ${nested(32)}`)),
    );
    // ... past it, the recursive canonicalization never runs: the bytes count.
    assert.notEqual(
      fingerprint('POST', '/orders', bytes(nested(33))),
      fingerprint('POST', '/orders', bytes(` ${nested(33)}`)),
    );
    assert.match(fingerprint('POST', '/orders', bytes(nested(1_000_000))), /^[A-Za-z0-9_-]{43}$/);
  });
});

describe('memberSource()', () => {
  const cases: [string, string, string, string | undefined][] = [
    ['a number as written', '{"orderId":1,"amount":24.999999999999999}', 'amount', '24.999999999999999'],
    ['blanks around it', '{ "amount" :\n 2.5e1 , "x": 1 }', 'amount', '2.5e1'],
    ['the last of repeated members, as JSON.parse', '{"amount":1,"amount":2}', 'amount', '2'],
    ['not a nested member', '{"a":{"amount":1},"b":[{"amount":2}]}', 'amount', undefined],
    ['nor one in a string', '{"note":"\\"amount\\":3","amount":4}', 'amount', '4'],
    ['an escaped key', '{"\\u0061mount":5}', 'amount', '5'],
    [
      'an object value, whole',
      '{"amount":{"amount":"1.00","currency":"EUR"}}',
      'amount',
      '{"amount":"1.00","currency":"EUR"}',
    ],
    ['absent', '{"orderId":1}', 'amount', undefined],
    ['a string value', '{"amount":"25"}', 'amount', '"25"'],
  ];
  for (const [name, text, member, expected] of cases) {
    it(`gives ${name}`, () => {
      assert.equal(memberSource(text, member), expected);
      assert.equal(memberSource(new TextEncoder().encode(text), member), expected);
    });
  }
});

describe('checkContentEncoding()', () => {
  for (const value of [null, 'identity', 'IDENTITY', ' identity ', 'identity, identity']) {
    it(`takes ${JSON.stringify(value)}`, () => {
      checkContentEncoding(value);
    });
  }
  for (const value of ['gzip', 'br', 'x-unknown', 'identity, gzip', 'deflate']) {
    it(`refuses ${JSON.stringify(value)} with 415 and Accept-Encoding: identity`, () => {
      assert.throws(
        () => checkContentEncoding(value),
        (error: unknown) =>
          error instanceof HttpError &&
          error.status === 415 &&
          error.slug === 'unsupported-media-type' &&
          error.init.headers?.['accept-encoding'] === 'identity',
      );
    });
  }
});

describe('scanJson() (contract §11: sizes before elements)', () => {
  const elements = (n: number, item = '{}') => Array.from({ length: n }, () => item).join(',');
  const holds = (what: string, max = MAX_JSON_ELEMENTS) =>
    `holds more than ${max} ${what}, the most any array or object of a request body may`;
  const cases: [string, string, { pointer: string; detail: string } | undefined][] = [
    ['1,000 items, the most an array may hold', `{"items":[${elements(1_000)}]}`, undefined],
    ['1,001 items', `{"items":[${elements(1_001)}]}`, { pointer: '/items', detail: holds('elements') }],
    ['349,000 items', `{"items":[${elements(349_000)}]}`, { pointer: '/items', detail: holds('elements') }],
    ['a nested array', `{"a":{"b":[${elements(1_001, '1')}]}}`, { pointer: '/a/b', detail: holds('elements') }],
    ['an array in an array', `[[],[${elements(1_001, '1')}]]`, { pointer: '/1', detail: holds('elements') }],
    [
      'a member name to escape',
      `{"a/b~c":[${elements(1_001, '1')}]}`,
      { pointer: '/a~1b~0c', detail: holds('elements') },
    ],
    [
      'an object of 1,001 members',
      `{${Array.from({ length: 1_001 }, (_, i) => `"k${i}":1`).join(',')}}`,
      { pointer: '', detail: holds('members') },
    ],
    [
      '12,000 values in arrays of 600',
      `[${elements(20, `[${elements(600, '1')}]`)}]`,
      { pointer: '', detail: `holds more than ${MAX_JSON_VALUES} values, the most a request body may` },
    ],
    ['commas in strings', `{"a":"${','.repeat(5_000)}"}`, undefined],
  ];
  for (const [name, text, oversize] of cases) {
    it(`finds ${name} ${oversize === undefined ? 'within the limits' : `too big at "${oversize.pointer}"`}`, () => {
      assert.deepEqual(scanJson(text).oversize, oversize);
    });
  }

  it('refuses 349,000 items with 422 before JSON.parse, naming /items', () => {
    const body = bytes(`{"items":[${elements(349_000)}]}`);
    const error = thrown(() => parseJson(body));
    assert.equal(error.status, 422);
    assert.equal(error.slug, 'validation');
    assert.deepEqual(error.init.errors, [{ pointer: '/items', detail: holds('elements') }]);
  });
});
