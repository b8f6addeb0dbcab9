/**
 * Content codings of answers (contract §16; RFC 9110 §8.4, §12.5.3): which
 * coding a request's `Accept-Encoding` asks for, which answers are worth
 * coding, the coded answer's entity tag, and the coding itself, with
 * `node:zlib`. Pure but for the memo of static bytes.
 *
 * - `gzip` and `br` only; `identity` is always possible (an answer no coding
 *   suits is sent as it is: RFC 9110 §12.5.3 allows no 406 for this).
 * - Answers of `MIN_CODED_BYTES` or more whose media type is text-like.
 * - Each coding has its own strong tag: the identity tag with `-gzip` or
 *   `-br` appended inside its quotes (`"abc"` → `"abc-gzip"`), so a cache
 *   never takes one coding's bytes for another's, and a condition naming
 *   any of a representation's tags matches it (`tagMatches()`).
 * - Dynamic answers are coded at once (zlib's synchronous calls: a page of
 *   100 orders takes a fraction of a millisecond, less than a trip to the
 *   thread pool costs here); static ones (`markStatic()`), once, in the thread
 *   pool, at a higher setting, then shared by every answer.
 */
import { promisify } from 'node:util';
import { brotliCompress, brotliCompressSync, constants, gzip, gzipSync } from 'node:zlib';

export type Coding = 'gzip' | 'br';

/**
 * Below this, coding saves less than it costs: a gzip header and trailer are
 * 18 bytes, and a page of 3 orders (1.2 KB) codes to a quarter in ~30 µs. The
 * threshold of contract §16; docs/record/performance.md measures what coding costs.
 */
export const MIN_CODED_BYTES = 1024;

/** RFC 9110 §12.4.2: qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ). */
const QVALUE = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/;
const TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;

/**
 * The coding to send for `acceptEncoding` (a request's `Accept-Encoding`, as
 * `headers.get()` gives it), or `undefined` for identity. The highest weight
 * wins, `br` before `gzip` at equal weight; `x-gzip` is `gzip` (RFC 9110
 * §8.4.1.3); `*` stands for any coding not named. Identity wins only when
 * named (or `*`) with a higher weight than both. An element that is not
 * `coding[;q=weight]` is ignored, as one this server does not know: no
 * coding is ever forced on a client by a malformed field.
 *
 * @example
 * negotiateCoding('gzip, deflate, br') // 'br'
 * negotiateCoding('br;q=0.5, gzip')    // 'gzip'
 * negotiateCoding('*;q=0')             // undefined
 * negotiateCoding(null)                // undefined: no field, no coding
 */
export function negotiateCoding(acceptEncoding: string | null): Coding | undefined {
  if (acceptEncoding === null) return undefined;
  const weights = new Map<string, number>();
  for (const element of acceptEncoding.split(',')) {
    const [name = '', ...parameters] = element.split(';');
    const coding = name.trim().toLowerCase();
    if (coding === '' || !TOKEN.test(coding)) continue;
    // RFC 9110 §12.5.3: codings [ weight ], the weight being the only parameter.
    if (parameters.length > 1) continue;
    const [key = 'q', value = '1'] = parameters[0]?.split('=') ?? [];
    if (key.trim().toLowerCase() !== 'q' || !QVALUE.test(value.trim())) continue;
    weights.set(coding === 'x-gzip' ? 'gzip' : coding, Number(value.trim()));
  }
  const any = weights.get('*');
  const weightOf = (coding: string) => weights.get(coding) ?? any ?? 0;
  const br = weightOf('br');
  const gzipWeight = weightOf('gzip');
  const best = Math.max(br, gzipWeight);
  const identity = weights.get('identity') ?? any ?? 0;
  if (best === 0 || identity > best) return undefined;
  return br >= gzipWeight ? 'br' : 'gzip';
}

/** Media types worth coding: text, JSON and XML of every kind, JavaScript, SVG. Images and fonts are coded already. */
export function isCompressible(contentType: string | null): boolean {
  if (contentType === null) return false;
  const semicolon = contentType.indexOf(';');
  const type = (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
  return (
    type.startsWith('text/') ||
    type === 'application/json' ||
    type.endsWith('+json') ||
    type === 'application/javascript' ||
    type === 'application/xml' ||
    type.endsWith('+xml')
  );
}

/**
 * The tag of `etag`'s representation in `coding`: the suffix goes inside the
 * quotes, so the tag stays one opaque string (RFC 9110 §8.8.3).
 *
 * @example
 * codedTag('"abc"', 'gzip')  // '"abc-gzip"'
 * codedTag('W/"abc"', 'br')  // 'W/"abc-br"'
 */
export function codedTag(etag: string, coding: Coding): string {
  return `${etag.slice(0, -1)}-${coding}"`;
}

/**
 * True when the opaque tag `given` (quotes included) names the
 * representation whose identity tag is `current`, in any coding.
 */
export function tagMatches(given: string, current: string): boolean {
  if (given === current) return true;
  if (!given.startsWith(current.slice(0, -1))) return false;
  const suffix = given.slice(current.length - 1);
  return suffix === '-gzip"' || suffix === '-br"';
}

/**
 * Dynamic answers: gzip level 3 and brotli quality 1. Measured on a page of
 * 100 orders (46 KB of version 2 JSON): both code it to 4.5 KB in ~120 µs,
 * where gzip 6 and brotli 4 take ~270 µs for 3.6–3.7 KB (docs/record/performance.md,
 * scenario 6): the bytes a client saves are nearly the same, the CPU half.
 */
const DYNAMIC_GZIP = { level: 3 };
const DYNAMIC_BROTLI = { params: { [constants.BROTLI_PARAM_QUALITY]: 1 } };

/** `bytes` in `coding`, now: for an answer built for this request. */
export function encode(bytes: Uint8Array, coding: Coding): Uint8Array {
  return coding === 'gzip' ? gzipSync(bytes, DYNAMIC_GZIP) : brotliCompressSync(bytes, DYNAMIC_BROTLI);
}

const gzipAsync = promisify(gzip);
const brotliAsync = promisify(brotliCompress);

/** Static bytes and their codings, made on the first request that asks for each. */
const precodedBytes = new WeakMap<Uint8Array, Partial<Record<Coding, Promise<Uint8Array>>>>();

/**
 * Marks `bytes` as static (the same for the life of the process): their
 * codings are made once, in the thread pool, at gzip's level 9 and brotli's
 * quality 9 (11 takes 20 times as long for 8 % fewer bytes: 2.8 s for the
 * 1.7 MB bundle of /docs), and shared by every answer.
 */
export function markStatic(bytes: Uint8Array): Uint8Array {
  if (!precodedBytes.has(bytes)) precodedBytes.set(bytes, {});
  return bytes;
}

/** `bytes` in `coding`: from the memo when they are static, else coded now. */
export function encoded(bytes: Uint8Array, coding: Coding): Uint8Array | Promise<Uint8Array> {
  const memo = precodedBytes.get(bytes);
  if (memo === undefined) return encode(bytes, coding);
  memo[coding] ??=
    coding === 'gzip'
      ? gzipAsync(bytes, { level: 9 })
      : brotliAsync(bytes, {
          params: { [constants.BROTLI_PARAM_QUALITY]: 9, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.byteLength },
        });
  return memo[coding];
}
