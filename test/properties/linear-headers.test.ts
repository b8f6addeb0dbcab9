/**
 * contract §11: every request header is handled in time linear in its length.
 * A property-based test (fast-check) of every pure function that reads request
 * text: values built from long runs of the characters their grammars split on
 * (blanks, "=", ",", ";", quotes, backslashes…), up to 120,000 characters,
 * each handled well within 250 ms of CPU time. A regular expression that
 * backtracks over a run (`/^\s+|\s+$/g` took 80 ms on 15,000 blanks between
 * two letters, and seconds at this length) fails it.
 *
 * Node's own parser refuses a header section over 16 KiB (431), so these
 * lengths never reach the functions over HTTP; they are here to make a
 * super-linear cost show far above the noise of a loaded machine.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseAuthorization, isWellFormedToken } from '../../src/auth/tokens.ts';
import { clientAddress, forwardedFor, trustedProxies, parseProxyEntry } from '../../src/http/client-address.ts';
import { negotiateCoding } from '../../src/http/compression.ts';
import { parseTagList } from '../../src/http/conditional.ts';
import { corsPolicy, parseOrigin } from '../../src/http/cors.ts';
import { parseIdempotencyKey } from '../../src/http/idempotency-key.ts';
import { checkContentEncoding, checkJsonContentType } from '../../src/http/json-body.ts';
import { memberSource, scanJson } from '../../src/http/json-scan.ts';
import { parseSort, positiveInteger } from '../../src/http/list-query.ts';
import { negotiate, parseAccept } from '../../src/http/negotiation.ts';
import { trimField } from '../../src/http/incoming-request.ts';
import { preferredType } from '../../src/pages/negotiate.ts';
import { cpuMs } from '../support/time.ts';

/**
 * The most CPU time one call may take (`cpuMs`, test/support/time.ts): linear work on these lengths takes a few ms
 * to some tens; quadratic, seconds. CPU time rather than wall-clock time, which a loaded machine doubled (495 ms
 * seen for linear work against a bound of 250 ms): other processes do not add to it, so the bound needs no slack
 * and still catches the seconds of a backtracking expression.
 */
const BUDGET_MS = 250;

const trusted = trustedProxies(parseProxyEntry('127.0.0.1') ?? []);
const anyOrigin = corsPolicy('*');

/** Every function of the service that reads a request header's text (or a query parameter's). */
const READERS: Record<string, (value: string) => unknown> = {
  'trimField (every field)': trimField,
  'parseAccept (Accept)': parseAccept,
  'negotiateCoding (Accept-Encoding)': negotiateCoding,
  'negotiate (Accept)': (v) => negotiate(v, 1),
  'preferredType (Accept of the pages)': (v) => preferredType(v, ['text/html', 'text/markdown', 'application/json']),
  'parseTagList (If-None-Match, If-Match)': parseTagList,
  'parseIdempotencyKey (Idempotency-Key)': parseIdempotencyKey,
  'parseAuthorization (Authorization)': parseAuthorization,
  'isWellFormedToken (Authorization)': isWellFormedToken,
  'checkJsonContentType (Content-Type)': (v) => swallow(() => checkJsonContentType(v, { patch: true, version: 1 })),
  'checkContentEncoding (Content-Encoding)': (v) => swallow(() => checkContentEncoding(v)),
  'forwardedFor (Forwarded)': forwardedFor,
  'clientAddress (X-Forwarded-For)': (v) => clientAddress('127.0.0.1', v, trusted, 'x-forwarded-for'),
  'clientAddress (Forwarded)': (v) => clientAddress('127.0.0.1', v, trusted, 'forwarded'),
  'corsPolicy (Origin)': anyOrigin,
  'parseOrigin (Origin)': parseOrigin,
  'parseSort (sort)': (v) => parseSort(v, ['id', 'createdAt', 'total']),
  'positiveInteger (page, pageSize, ids)': positiveInteger,
  'scanJson (a body)': scanJson,
  'memberSource (a body)': (v) => memberSource(v, 'amount'),
};

function swallow(fn: () => void): void {
  try {
    fn();
  } catch {
    // A refusal is an answer too: what is timed is reaching it.
  }
}

/** The characters header grammars split, trim or quote on, and a few ordinary ones. */
const PALETTE = [' ', '\t', '=', ',', ';', '"', '\\', '/', ':', '*', 'a', '0', '.', 'W', 'q', '[', '{', '-', '_', '~'];

/** A value of 1 to 4 runs, each one character repeated up to 30,000 times. */
const runs = fc
  .array(fc.tuple(fc.constantFrom(...PALETTE), fc.integer({ min: 1, max: 30_000 })), { minLength: 1, maxLength: 4 })
  .map((parts) => parts.map(([c, n]) => c.repeat(n)).join(''));

/** The CPU time `fn(value)` takes, in ms. */
const timed = (fn: (value: string) => unknown, value: string): number => cpuMs(() => fn(value));

describe('reading request text (contract §11: linear in its length)', () => {
  for (const [name, read] of Object.entries(READERS)) {
    it(`${name} handles long runs of separators within ${BUDGET_MS} ms`, () => {
      fc.assert(
        fc.property(runs, (value) => {
          const ms = timed(read, value);
          assert.ok(ms < BUDGET_MS, `${ms.toFixed(1)} ms on ${value.length} characters`);
        }),
        { numRuns: 60 },
      );
    });
  }

  // The shapes found by hand, each around a long run, as fixed cases.
  const worst = (run: string) => [
    `x${run}y`,
    `${run}x`,
    `x${run}`,
    `"${run}`,
    `a=${run}b`,
    `text/plain;${run}charset`,
    `W/"${run}`,
    `for=${run}`,
  ];
  for (const run of [' '.repeat(100_000), '\t'.repeat(100_000), ','.repeat(100_000), '\\'.repeat(100_000)]) {
    it(`handles values around ${run.length.toLocaleString('en')} × ${JSON.stringify(run[0])} in every reader`, () => {
      for (const [name, read] of Object.entries(READERS)) {
        for (const value of worst(run)) {
          const ms = timed(read, value);
          assert.ok(ms < BUDGET_MS, `${name}: ${ms.toFixed(1)} ms on ${JSON.stringify(value.slice(0, 12))}…`);
        }
      }
    });
  }

  it('trims a field exactly as Headers does', () => {
    for (const value of ['', ' ', ' a ', '\t\r\n a b \t', 'a', ' x'.repeat(3)])
      assert.equal(trimField(value), new Headers({ x: value.replace(/[\r\n]/g, ' ') }).get('x')?.trim() ?? '');
    assert.equal(trimField('\r\n\t a \t\r\n'), 'a');
  });
});
