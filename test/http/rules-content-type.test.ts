/**
 * The request Content-Type rule (contract §8; RFC 8259 §8.1; RFC 5789 §3.1;
 * src/http/json-body.ts checkJsonContentType()) as a table: one row per
 * header value and options, with the exact outcome: accepted, or the exact
 * 415 `unsupported-media-type` (detail and fields) thrown.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkJsonContentType, type BodyOptions } from '../../src/http/json-body.ts';
import { HttpError, type ProblemInit } from '../../src/http/problem.ts';

type Outcome = 'ok' | { readonly status: number; readonly slug: string; readonly init: ProblemInit };

const ACCEPT_PATCH = { 'accept-patch': 'application/json, application/merge-patch+json' };
const refused = (detail: string): Outcome => ({ status: 415, slug: 'unsupported-media-type', init: { detail } });
/** A PATCH's 415 names what it takes in Accept-Patch (RFC 5789 §3.1). */
const refusedPatch = (detail: string): Outcome => ({
  status: 415,
  slug: 'unsupported-media-type',
  init: { detail, headers: ACCEPT_PATCH },
});
const unsupported = (type: string) => refused(`Content-Type ${type} is not supported here; send application/json.`);
const NOT_UTF8 = refused('JSON bodies must be UTF-8.');
const wrongVersion = (type: string, body: number, served: number) =>
  `Content-Type ${type} is a version ${body} body, but the request is served in version ${served}.`;

const POST: BodyOptions = {};
const PATCH: BodyOptions = { patch: true };
const V1: BodyOptions = { version: 1 };
const V2: BodyOptions = { version: 2 };
const PATCH_V1: BodyOptions = { patch: true, version: 1 };

/** [name, Content-Type (as headers.get() returns it), options, outcome]. */
const CASES: readonly (readonly [string, string | null, BodyOptions, Outcome])[] = [
  ['plain JSON', 'application/json', POST, 'ok'],
  ['plain JSON, any case', 'Application/JSON', POST, 'ok'],
  ['whitespace around', '  application/json  ', POST, 'ok'],
  ['charset=utf-8', 'application/json; charset=utf-8', POST, 'ok'],
  ['charset=UTF-8, no space', 'application/json;charset=UTF-8', POST, 'ok'],
  ['charset quoted', 'application/json; charset="utf-8"', POST, 'ok'],
  ['CHARSET="UTF-8"', 'application/json; CHARSET="UTF-8"', POST, 'ok'],
  ['charset=utf8 (alias)', 'application/json; charset=utf8', POST, 'ok'],
  ['spaces around =', 'application/json; charset = utf-8', POST, 'ok'],
  ['another parameter is ignored', 'application/json; foo=bar', POST, 'ok'],
  ['the first charset decides (utf-8 first)', 'application/json; charset=utf-8; charset=latin1', POST, 'ok'],
  ['the first charset decides (latin1 first)', 'application/json; charset=latin1; charset=utf-8', POST, NOT_UTF8],
  ['charset=iso-8859-1', 'application/json; charset=iso-8859-1', POST, NOT_UTF8],
  ['charset=utf-16', 'application/json; charset=utf-16', POST, NOT_UTF8],
  ['an empty charset', 'application/json; charset=', POST, NOT_UTF8],
  ['missing', null, POST, refused('The request body needs Content-Type: application/json.')],
  ['empty', '', POST, unsupported('')],
  ['only a semicolon', ';', POST, unsupported('')],
  ['text/plain', 'text/plain', POST, unsupported('text/plain')],
  ['text/json', 'text/json', POST, unsupported('text/json')],
  ['a wildcard', 'application/*', POST, unsupported('application/*')],
  ['problem+json', 'application/problem+json', POST, unsupported('application/problem+json')],
  ['form data', 'application/x-www-form-urlencoded', POST, unsupported('application/x-www-form-urlencoded')],
  ['a space inside the type', 'application /json', POST, unsupported('application /json')],
  ['trailing junk', 'application/json garbage', POST, unsupported('application/json garbage')],
  ['two values joined by a comma', 'application/json, text/plain', POST, unsupported('application/json, text/plain')],
  ['merge patch outside PATCH', 'application/merge-patch+json', POST, unsupported('application/merge-patch+json')],
  ['vendor v1, version unknown', 'application/vnd.orders.v1+json', POST, 'ok'],
  ['vendor v2, version unknown', 'application/vnd.orders.v2+json', POST, 'ok'],
  ['vendor v1 served in v1', 'application/vnd.orders.v1+json', V1, 'ok'],
  ['vendor v2 served in v2', 'application/vnd.orders.v2+json; charset=utf-8', V2, 'ok'],
  [
    'vendor v1 served in v2',
    'application/vnd.orders.v1+json',
    V2,
    refused(wrongVersion('application/vnd.orders.v1+json', 1, 2)),
  ],
  [
    'vendor v2 served in v1',
    'application/vnd.orders.v2+json',
    V1,
    refused(wrongVersion('application/vnd.orders.v2+json', 2, 1)),
  ],
  ['vendor, any case, served in its version', 'Application/Vnd.Orders.V2+JSON', V2, 'ok'],
  [
    'vendor, any case, the detail keeps the case sent',
    'Application/Vnd.Orders.V2+JSON',
    V1,
    refused(wrongVersion('Application/Vnd.Orders.V2+JSON', 2, 1)),
  ],
  [
    'vendor in the wrong version and charset: the charset is named',
    'application/vnd.orders.v2+json; charset=latin1',
    V1,
    NOT_UTF8,
  ],
  ['vendor v3', 'application/vnd.orders.v3+json', V2, unsupported('application/vnd.orders.v3+json')],
  ['plain JSON in any version', 'application/json', V2, 'ok'],
  ['PATCH: merge patch', 'application/merge-patch+json', PATCH, 'ok'],
  ['PATCH: merge patch, utf-8', 'application/merge-patch+json; charset=utf-8', PATCH_V1, 'ok'],
  ['PATCH: plain JSON', 'application/json', PATCH, 'ok'],
  ['PATCH: vendor type of its version', 'application/vnd.orders.v1+json', PATCH_V1, 'ok'],
  [
    'PATCH: merge patch, another charset',
    'application/merge-patch+json; charset=latin1',
    PATCH,
    refusedPatch('JSON bodies must be UTF-8.'),
  ],
  [
    'PATCH: missing',
    null,
    PATCH,
    refusedPatch('The request body needs Content-Type: application/json or application/merge-patch+json.'),
  ],
  [
    'PATCH: text/plain',
    'text/plain',
    PATCH,
    refusedPatch(
      'Content-Type text/plain is not supported here; ' + 'send application/json or application/merge-patch+json.',
    ),
  ],
  [
    'PATCH: vendor type of the other version',
    'application/vnd.orders.v2+json',
    PATCH_V1,
    refusedPatch(wrongVersion('application/vnd.orders.v2+json', 2, 1)),
  ],
];

/** What checkJsonContentType() did: 'ok', or the HttpError it threw. */
function outcomeOf(contentType: string | null, options: BodyOptions): Outcome {
  try {
    checkJsonContentType(contentType, options);
    return 'ok';
  } catch (error) {
    assert.ok(error instanceof HttpError, String(error));
    return { status: error.status, slug: error.slug, init: error.init };
  }
}

for (const [name, contentType, options, expected] of CASES) {
  test(`${name} (${JSON.stringify(contentType)}, ${JSON.stringify(options)})`, () => {
    assert.deepStrictEqual(outcomeOf(contentType, options), expected);
  });
}
