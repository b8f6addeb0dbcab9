/**
 * The response policy (contract §8, §9; src/http/semantics.ts) as tables, tested
 * on finish() and notModifiedEarly() directly, without a server: which 200s
 * become a 304, and the exact fields a 304 carries. RFC 9110 §15.4.5: a 304
 * carries those of Cache-Control, Content-Location, Date, ETag, Expires and
 * Vary a 200 would have sent, and no other representation metadata.
 *
 * Date is the exception here: finish() does not copy the 200's Date (a Date
 * is the time the 304 is generated, RFC 9110 §6.6.1); node's ServerResponse
 * writes a fresh one on every response (`sendDate`, on by default, never
 * turned off in src/). X-Request-Id, Vary by Accept/Authorization/Origin and
 * the version 1 fields are added by the pipeline after finish(), on the 304
 * as on the 200.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { etagOf, parseConditions, type Conditions } from '../../src/http/conditional.ts';
import { HttpError } from '../../src/http/problem.ts';
import { bufferedResponse } from '../../src/http/response.ts';
import { finish, notModifiedEarly, type FinishOptions } from '../../src/http/semantics.ts';

const BODY = '{"id":1,"status":"paid"}';
const BODY_TAG = etagOf(new TextEncoder().encode(BODY));
const PRIVATE: FinishOptions = { cache: 'private', contentType: 'application/vnd.orders.v1+json', cacheMaxAge: 30 };
const PUBLIC: FinishOptions = { cache: 'public', contentType: 'application/vnd.orders.v2+json', cacheMaxAge: 60 };
const NO_STORE: FinishOptions = { cache: 'no-store', contentType: undefined, cacheMaxAge: 30 };

/** The fields of RFC 9110 §15.4.5 a 304 keeps, as a handler's 200 would send them. */
const KEPT = {
  'cache-control': 'no-cache', // the route's policy replaces the handler's own
  'content-location': '/v1/orders/1',
  date: 'Tue, 01 Jul 2025 10:00:00 GMT',
  etag: '"r7"',
  expires: 'Wed, 02 Jul 2025 10:00:00 GMT',
  vary: 'Accept-Language',
};
/** Representation metadata and other fields a 304 must not carry. */
const OTHERS = {
  'accept-patch': 'application/json, application/merge-patch+json',
  allow: 'GET, PUT, PATCH, DELETE',
  'content-language': 'en',
  'content-length': String(BODY.length),
  'content-type': 'application/json',
  deprecation: '@1735689600',
  'last-modified': 'Tue, 01 Jul 2025 09:00:00 GMT',
  link: '</v2/orders/1>; rel="successor-version"',
  location: '/v1/orders/1',
  ratelimit: '"default";r=99;t=60',
  'ratelimit-policy': '"default";q=100;w=60',
  sunset: 'Wed, 31 Dec 2025 23:59:59 GMT',
  'x-request-id': 'req-1',
};
const MANY = { ...KEPT, ...OTHERS };

/** [name, fields] of the kinds of 200 a handler makes. */
type Make = (headers: Record<string, string>) => Response;
const buffered: Make = (headers) => bufferedResponse(new TextEncoder().encode(BODY), { status: 200, headers });
const streamed: Make = (headers) => new Response(BODY, { status: 200, headers });

interface Outcome {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** The 304 finish() makes from a MANY 200 under PRIVATE: exactly the five fields RFC 9110 §15.4.5 lists, less Date. */
const NOT_MODIFIED_MANY: Outcome = {
  status: 304,
  headers: {
    'cache-control': 'private, max-age=30',
    'content-location': '/v1/orders/1',
    etag: '"r7"',
    expires: 'Wed, 02 Jul 2025 10:00:00 GMT',
    vary: 'Accept-Language',
  },
  body: '',
};

/** [name, method, If-None-Match, the 200, options, what finish() answers]. */
const FINISH: readonly (readonly [string, string, string | null, Response, FinishOptions, Outcome | HttpError])[] = [
  [
    'a 200 with many fields, matched: only the §15.4.5 fields',
    'GET',
    '"r7"',
    buffered(MANY),
    PRIVATE,
    NOT_MODIFIED_MANY,
  ],
  ['the same, streamed', 'GET', '"r7"', streamed(MANY), PRIVATE, NOT_MODIFIED_MANY],
  ['the same, HEAD', 'HEAD', '"r7"', buffered(MANY), PRIVATE, NOT_MODIFIED_MANY],
  ['the same, matched weakly', 'GET', 'W/"r7"', buffered(MANY), PRIVATE, NOT_MODIFIED_MANY],
  ['the same, matched by *', 'GET', '*', buffered(MANY), PRIVATE, NOT_MODIFIED_MANY],
  ['the same, matched in a list', 'GET', '"r6", "r7"', buffered(MANY), PRIVATE, NOT_MODIFIED_MANY],
  [
    'only fields outside §15.4.5, tag from the bytes',
    'GET',
    BODY_TAG,
    buffered(OTHERS),
    PUBLIC,
    { status: 304, headers: { 'cache-control': 'public, max-age=60', etag: BODY_TAG }, body: '' },
  ],
  [
    'the same, streamed',
    'GET',
    BODY_TAG,
    streamed(OTHERS),
    PUBLIC,
    { status: 304, headers: { 'cache-control': 'public, max-age=60', etag: BODY_TAG }, body: '' },
  ],
  [
    'a no-store route',
    'GET',
    '"r7"',
    buffered(MANY),
    NO_STORE,
    { ...NOT_MODIFIED_MANY, headers: { ...NOT_MODIFIED_MANY.headers, 'cache-control': 'no-store' } },
  ],
  [
    'not matched: the 200, with the negotiated type and the route policy',
    'GET',
    '"r6"',
    buffered(MANY),
    PRIVATE,
    {
      status: 200,
      headers: { ...MANY, 'cache-control': 'private, max-age=30', 'content-type': 'application/vnd.orders.v1+json' },
      body: BODY,
    },
  ],
  [
    'no If-None-Match: the 200, its tag from the bytes',
    'GET',
    null,
    buffered(OTHERS),
    PUBLIC,
    {
      status: 200,
      headers: {
        ...OTHERS,
        'cache-control': 'public, max-age=60',
        'content-type': 'application/vnd.orders.v2+json',
        etag: BODY_TAG,
      },
      body: BODY,
    },
  ],
  [
    'a write never answers 304 (its 200 is not stored)',
    'POST',
    '"r7"',
    buffered(MANY),
    PRIVATE,
    {
      status: 200,
      headers: { ...MANY, 'cache-control': 'no-store', 'content-type': 'application/vnd.orders.v1+json' },
      body: BODY,
    },
  ],
  [
    'a streamed 202: not tagged, its body passed on unread',
    'GET',
    null,
    new Response(BODY, { status: 202, headers: OTHERS }),
    PRIVATE,
    {
      status: 202,
      headers: { ...OTHERS, 'cache-control': 'private, max-age=30', 'content-type': 'application/vnd.orders.v1+json' },
      body: BODY,
    },
  ],
  [
    'a streamed 200 without a body: not tagged',
    'GET',
    '"r7"',
    new Response(null, { status: 200, headers: OTHERS }),
    PRIVATE,
    {
      status: 200,
      headers: { ...OTHERS, 'cache-control': 'private, max-age=30', 'content-type': 'application/vnd.orders.v1+json' },
      body: '',
    },
  ],
  [
    'a malformed If-None-Match',
    'GET',
    'r7',
    buffered(MANY),
    PRIVATE,
    new HttpError(400, 'invalid-header', {
      detail: 'If-None-Match must be * or a list of entity tags such as "abc", W/"abc".',
    }),
  ],
];

async function outcomeOf(
  run: () => Response | undefined | Promise<Response | undefined>,
): Promise<Outcome | HttpError | undefined> {
  try {
    const response = await run();
    if (response === undefined) return undefined;
    return { status: response.status, headers: Object.fromEntries(response.headers), body: await response.text() };
  } catch (error) {
    assert.ok(error instanceof HttpError, String(error));
    return error;
  }
}

/** The conditions the pipeline hands on for a request of `method` with `ifNoneMatch` (parsed on GET and HEAD). */
const conditionsOf = (method: string, ifNoneMatch: string | null): Conditions =>
  parseConditions(method === 'GET' || method === 'HEAD' ? ifNoneMatch : null, null);

/** An HttpError compares by status, slug and init; anything else exactly. */
function assertOutcome(actual: Outcome | HttpError | undefined, expected: Outcome | HttpError | undefined): void {
  if (expected instanceof HttpError) {
    assert.ok(actual instanceof HttpError, `expected an HttpError, got ${JSON.stringify(actual)}`);
    assert.deepStrictEqual([actual.status, actual.slug, actual.init], [expected.status, expected.slug, expected.init]);
  } else {
    assert.deepStrictEqual(actual, expected);
  }
}

for (const [name, method, condition, response, options, expected] of FINISH) {
  test(`finish(): ${name} (${method}, ${JSON.stringify(condition)})`, async () => {
    assertOutcome(await outcomeOf(() => finish(method, conditionsOf(method, condition), response, options)), expected);
  });
}

test('finish(): a 304 of a 200 with many fields has exactly the names of RFC 9110 §15.4.5, Date aside', async () => {
  const response = await finish('GET', conditionsOf('GET', '"r7"'), buffered(MANY), PRIVATE);
  const names = ['cache-control', 'content-location', 'etag', 'expires', 'vary'];
  assert.deepStrictEqual([...response.headers.keys()], names);
});

/** What notModifiedEarly() answers: undefined, the handler builds the 200. */
type Early = Outcome | HttpError | undefined;
/** [name, method, If-None-Match, options, what notModifiedEarly() answers, whether the tag is looked up]. */
const EARLY: readonly (readonly [string, string, string | null, FinishOptions, Early, boolean])[] = [
  [
    'matched: ETag and Cache-Control only',
    'GET',
    '"r7"',
    PRIVATE,
    { status: 304, headers: { 'cache-control': 'private, max-age=30', etag: '"r7"' }, body: '' },
    true,
  ],
  [
    'matched weakly, HEAD',
    'HEAD',
    'W/"r7"',
    PRIVATE,
    { status: 304, headers: { 'cache-control': 'private, max-age=30', etag: '"r7"' }, body: '' },
    true,
  ],
  [
    'matched by *, no-store',
    'GET',
    '*',
    NO_STORE,
    { status: 304, headers: { 'cache-control': 'no-store', etag: '"r7"' }, body: '' },
    true,
  ],
  ['not matched', 'GET', '"r6"', PRIVATE, undefined, true],
  ['no If-None-Match: the tag is not looked up', 'GET', null, PRIVATE, undefined, false],
  ['a write: the tag is not looked up', 'PUT', '"r7"', PRIVATE, undefined, false],
  [
    'malformed: 400 before the tag is looked up (before a 404)',
    'GET',
    'r7',
    PRIVATE,
    new HttpError(400, 'invalid-header', {
      detail: 'If-None-Match must be * or a list of entity tags such as "abc", W/"abc".',
    }),
    false,
  ],
];

for (const [name, method, condition, options, expected, looksUp] of EARLY) {
  test(`notModifiedEarly(): ${name} (${method}, ${JSON.stringify(condition)})`, async () => {
    let lookups = 0;
    const currentTag = async () => {
      lookups += 1;
      return '"r7"';
    };
    assertOutcome(
      await outcomeOf(() => notModifiedEarly(method, conditionsOf(method, condition), currentTag, options)),
      expected,
    );
    assert.strictEqual(lookups, looksUp ? 1 : 0);
  });
}
