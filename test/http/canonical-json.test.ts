/**
 * The idempotency fingerprint's canonical JSON (src/http/canonical-json.ts;
 * contract §7): numbers by their exact decimal value, as the payment rule
 * compares amounts (contract §4), and every ordinary body in exactly the form
 * a fingerprint stored before had (a retry under a key from before is still
 * a replay).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canonicalJsonText, exactDecimal } from '../../src/http/canonical-json.ts';
import { fingerprint } from '../../src/http/idempotency-key.ts';

/** The canonical form fingerprints had before numbers were compared exactly: JSON.parse, then sorted keys. */
function parsedForm(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(parsedForm).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${parsedForm((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value);
}

const bytes = (text: string) => new TextEncoder().encode(text);

describe('exactDecimal()', () => {
  const cases: [string, string | undefined][] = [
    ['25', '25e0'],
    ['25.00', '25e0'],
    ['2.5e1', '25e0'],
    ['250e-1', '25e0'],
    ['24.999999999999999', '24999999999999999e-15'],
    ['0', '0'],
    ['-0', '0'],
    ['0.000', '0'],
    ['-1.50', '-15e-1'],
    ['100', '1e2'],
    ['1E+2', '1e2'],
    ['0.01', '1e-2'],
    ['1e400', '1e400'],
    ['1e0000000000000001', undefined],
    ['null', undefined],
    ['1.', undefined],
    ['', undefined],
  ];
  for (const [text, expected] of cases) {
    it(`${JSON.stringify(text)} → ${expected}`, () => assert.equal(exactDecimal(text), expected));
  }
});

describe('canonicalJsonText()', () => {
  it('sorts members at every depth, keeps the last of repeated names, and writes strings as JSON.stringify', () => {
    assert.equal(
      canonicalJsonText(' { "b" : [ 1 , {"z":true,"a":null} ], "a":"\\u00e9\\n", "b2":false, "a":"x" } '),
      '{"a":"x","b":[1,{"a":null,"z":true}],"b2":false}',
    );
    assert.equal(canonicalJsonText('[]'), '[]');
    assert.equal(canonicalJsonText('{}'), '{}');
    assert.equal(canonicalJsonText('"\\u00e9"'), '"é"');
  });

  it('writes a number as its float does when that is the same decimal, else # and its exact decimal', () => {
    assert.equal(canonicalJsonText('[25, 25.00, 2.5e1, 0.1, -0, 1E+21]'), '[25,25,25,0.1,0,1e+21]');
    assert.equal(canonicalJsonText('24.999999999999999'), '#24999999999999999e-15');
    assert.equal(canonicalJsonText('0.30000000000000001'), '#30000000000000001e-17');
    assert.equal(canonicalJsonText('1e400'), '#1e400');
    assert.equal(canonicalJsonText('9007199254740993'), '#9007199254740993e0');
  });

  it('gives every body whose numbers are what their floats say the form fingerprints always had', () => {
    const bodies = [
      '{"items":[{"productId":1,"qty":2},{"productId":3,"qty":1}]}',
      '{"orderId":12,"amount":59.9,"currency":"EUR"}',
      '{"orderId":12,"amount":{"amount":"59.90","currency":"EUR"}}',
      '{"status":"cancelled","customerId":7,"items":[]}',
      '{"url":"https://hooks.example/x","events":["order.created"],"nested":{"b":[1.5,-2,0.001],"a":{}}}',
      '[1,"two",null,true,false,{"k":"v"}]',
      '{"__proto__":1,"constructor":{"x":2},"10":"a","9":"b"}',
    ];
    for (const body of bodies) assert.equal(canonicalJsonText(body), parsedForm(JSON.parse(body)), body);
  });
});

describe('fingerprint() and amounts (contract §7 with §4)', () => {
  const path = '/v1/payments v1';
  const body = (amount: string) => bytes(`{"orderId":1,"amount":${amount},"currency":"EUR"}`);

  it('tells 24.999999999999999 from 25, which the payment rule tells apart', () => {
    assert.notEqual(fingerprint('POST', path, body('24.999999999999999')), fingerprint('POST', path, body('25')));
  });

  it('takes 25, 25.00 and 2.5e1 for one amount, as the payment rule does', () => {
    const one = fingerprint('POST', path, body('25'));
    assert.equal(fingerprint('POST', path, body('25.00')), one);
    assert.equal(fingerprint('POST', path, body('2.5e1')), one);
  });

  it('never takes a number for the string of its exact decimal', () => {
    assert.notEqual(
      fingerprint('POST', path, body('24.999999999999999')),
      fingerprint('POST', path, body('"#24999999999999999e-15"')),
    );
  });
});
