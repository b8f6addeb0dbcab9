/**
 * The buffered response's fields (src/http/response.ts): kept as node's flat list, they must read and change as a
 * `Headers` would (names without regard to case, repeated fields joined by ", "), and reach `writeHead` in the order
 * they were first set.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bufferedResponse, contentOf, fieldLines, fieldsOf, type Fields, heldOf } from '../../src/http/response.ts';

/** The same steps on a buffered response's fields and on a real `Headers`. */
function both(steps: (fields: Fields) => void): { fields: Fields; headers: Headers } {
  const fields = fieldsOf(bufferedResponse(null, { status: 204 }));
  const headers = new Headers();
  steps(fields);
  steps(headers);
  return { fields, headers };
}

const entriesOf = (fields: Fields): [string, string][] => {
  const entries: [string, string][] = [];
  fields.forEach((value, name) => {
    entries.push([name, value]);
  });
  return entries;
};

describe('a buffered response’s fields', () => {
  const cases: [string, (fields: Fields) => void][] = [
    [
      'set, then set again under another case',
      (f) => {
        f.set('ETag', '"a"');
        f.set('etag', '"b"');
      },
    ],
    [
      'append to a field set before',
      (f) => {
        f.set('Vary', 'Accept');
        f.append('vary', 'Origin');
      },
    ],
    ['append to none', (f) => f.append('Link', '</v2/orders/1>; rel="successor-version"')],
    [
      'delete under another case',
      (f) => {
        f.set('x-one', '1');
        f.set('x-two', '2');
        f.delete('X-One');
      },
    ],
    [
      'delete a field never set',
      (f) => {
        f.set('x-one', '1');
        f.delete('x-none');
      },
    ],
  ];
  for (const [name, steps] of cases) {
    it(`reads as Headers would after: ${name}`, () => {
      const { fields, headers } = both(steps);
      for (const field of ['etag', 'ETAG', 'vary', 'link', 'x-one', 'X-Two', 'x-none']) {
        assert.equal(fields.get(field), headers.get(field), field);
        assert.equal(fields.has(field), headers.has(field), field);
      }
      // Headers sorts its names; the flat list keeps the order fields were first set.
      assert.deepEqual(
        entriesOf(fields).sort(([a], [b]) => (a < b ? -1 : 1)),
        [...headers.entries()],
      );
    });
  }

  it('keeps the order fields were first set, a value set again in its place', () => {
    const response = bufferedResponse(null, {
      status: 204,
      headers: { 'Content-Type': 'application/json', etag: '"a"' },
    });
    const fields = fieldsOf(response);
    fields.set('vary', 'Accept');
    fields.set('ETag', '"b"');
    fields.delete('content-type');
    fields.append('x-request-id', 'r-1');
    assert.deepEqual(fieldLines(response), ['etag', '"b"', 'vary', 'Accept', 'x-request-id', 'r-1']);
  });

  it('gives writeHead a copy: adding to it leaves the response as it was', () => {
    const response = bufferedResponse(null, { status: 204, headers: [['allow', 'GET, HEAD']] });
    const lines = fieldLines(response);
    lines.push('connection', 'close');
    assert.deepEqual(fieldLines(response), ['allow', 'GET, HEAD']);
    assert.equal(fieldsOf(response).get('connection'), null);
  });

  it('are copied from another response’s fields, and become Headers once reached for', () => {
    const first = bufferedResponse(null, { status: 204, headers: { etag: '"a"', vary: 'Accept' } });
    const second = bufferedResponse(new TextEncoder().encode('{}'), { status: 200, headers: fieldsOf(first) });
    fieldsOf(second).set('etag', '"b"');
    assert.equal(fieldsOf(first).get('etag'), '"a"');
    assert.deepEqual(
      [...second.headers.entries()],
      [
        ['etag', '"b"'],
        ['vary', 'Accept'],
      ],
    );
    // From then on the Headers are the fields: a change shows in both.
    fieldsOf(second).set('x-late', '1');
    assert.deepEqual(fieldLines(second), ['etag', '"b"', 'vary', 'Accept', 'x-late', '1']);
  });
});

describe('a buffered response of a text', () => {
  const text = '{"name":"Café ☕","emoji":"😀"}';

  it('counts its bytes without encoding it, and encodes it once when its bytes are reached for', () => {
    const response = bufferedResponse(text, { status: 200 });
    const held = heldOf(response);
    assert.ok(held !== undefined);
    assert.equal(held.empty, false);
    assert.equal(held.size, 35);
    assert.equal(held.size, Buffer.byteLength(text, 'utf8'));
    assert.equal(held.unencoded, text, 'not encoded while nothing asked for the bytes');
    const bytes = contentOf(response);
    assert.deepEqual(bytes, Buffer.from(text, 'utf8'));
    assert.equal(contentOf(response), bytes, 'encoded once');
    assert.equal(held.unencoded, undefined, 'the bytes go out from then on');
    assert.equal(held.size, 35);
  });

  it('holds nothing on a status without content, and reads as a real Response', async () => {
    const none = heldOf(bufferedResponse(text, { status: 304 }));
    assert.equal(none?.empty, true);
    assert.equal(none?.content, null);
    assert.equal(none?.unencoded, undefined);
    assert.equal(none?.size, 0);
    const response = bufferedResponse(text, { status: 201, headers: { 'content-type': 'application/json' } });
    assert.deepEqual(await response.json(), { name: 'Café ☕', emoji: '😀' });
  });

  it('is not a buffered response when it is a real Response', () => {
    assert.equal(heldOf(new Response('x')), undefined);
    assert.equal(contentOf(new Response('x')), undefined);
  });
});
