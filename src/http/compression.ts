/**
 * Content codings of answers (contract §16; RFC 9110 §8.4), with `node:zlib`: `gzip` and `br` only, for text-like
 * answers of `MIN_CODED_BYTES` or more; an answer no coding suits is sent as it is (RFC 9110 §12.5.3 allows no 406
 * for this). Each coding has its own strong tag (`codedTag()`), so a cache never takes one coding's bytes for
 * another's. Dynamic answers are coded at once, synchronously (cheaper here than a trip to the thread pool);
 * static ones (`markStatic()`) once, in the thread pool, at a higher setting.
 */
import { promisify } from 'node:util';
import { brotliCompress, brotliCompressSync, constants, gzip, gzipSync } from 'node:zlib';

export type Coding = 'gzip' | 'br';

/** Below this, coding saves less than it costs: a gzip header and trailer alone are 18 bytes. */
export const MIN_CODED_BYTES = 1024;

/** RFC 9110 §12.4.2: qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ). */
const QVALUE = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/;
const TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;

/**
 * The coding to send for `Accept-Encoding`, or `undefined` for identity: the highest weight, `br` before `gzip` at
 * equal weight; `x-gzip` is `gzip` (RFC 9110 §8.4.1.3); `*` is any coding not named; identity wins only when named
 * (or `*`) with a higher weight than both. A malformed element is ignored: it never forces a coding on a client.
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

/** `etag`'s tag in `coding`: the suffix goes inside the quotes (`"abc-gzip"`), one opaque tag (RFC 9110 §8.8.3). */
export function codedTag(etag: string, coding: Coding): string {
  return `${etag.slice(0, -1)}-${coding}"`;
}

/** Whether the opaque tag `given` names the representation whose identity tag is `current`, in any coding. */
export function tagMatches(given: string, current: string): boolean {
  if (given === current) return true;
  if (!given.startsWith(current.slice(0, -1))) return false;
  const suffix = given.slice(current.length - 1);
  return suffix === '-gzip"' || suffix === '-br"';
}

/** Dynamic answers: low settings, nearly the bytes of higher ones for half the CPU (docs/record/performance.md). */
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
 * Marks `bytes` as static (the same for the life of the process): their codings are made once, in the thread
 * pool, at level 9 (brotli's 11 takes 20 times as long for 8 % fewer bytes), and shared by every answer.
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
