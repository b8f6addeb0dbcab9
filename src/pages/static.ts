/**
 * Representations that never change while the process runs (the index, the
 * API reference and its files, the problem pages): their bytes, media type
 * and strong entity tag computed once, and the response for a GET or HEAD of
 * one. All are public: the same for every caller.
 */
import type { RequestContext } from '../app.ts';
import { etagOf, noneMatchHits, parseTagList } from '../http/conditional.ts';
import { fieldOf } from '../http/node-adapter.ts';
import { bufferedResponse } from '../http/response.ts';
import type { CachePolicy } from '../http/semantics.ts';

/** The `cache` of every page route; the pipeline's `finish()` turns it into `Cache-Control` on the 200. */
export const PAGE_CACHE: CachePolicy = 'public';

export const HTML_TYPE = 'text/html; charset=utf-8';

export interface StaticBody {
  readonly bytes: Uint8Array;
  /** The `Content-Type` value. */
  readonly type: string;
  /** Strong, from the bytes (SPEC §9). */
  readonly etag: string;
}

/** `content` (text as UTF-8, or bytes) as a static representation of media type `type`. */
export function staticBody(content: string | Uint8Array, type: string): StaticBody {
  const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
  return { bytes, type, etag: etagOf(bytes) };
}

/**
 * The 200 of `body` with `headers`, or a 304 when `If-None-Match` matches
 * its tag. Answered here rather than by `finish()` so that the 304 keeps a
 * `Vary` the route sets itself, which the pipeline adds only for versioned
 * or authenticated routes (RFC 9110 §15.4.5: a 304 carries the ETag,
 * Cache-Control and Vary the 200 would). A malformed `If-None-Match` is left
 * to `finish()`, which refuses it with 400 `invalid-header` as on every route.
 */
export function staticResponse(ctx: RequestContext, body: StaticBody, headers: Readonly<Record<string, string>> = {}): Response {
  const condition = parseTagList(fieldOf(ctx.request, 'if-none-match'));
  if (condition !== null && condition !== undefined && noneMatchHits(condition, body.etag)) {
    // `finish()` sees only 2xx answers: the 304's Cache-Control is the one it gives a PAGE_CACHE route's 200.
    const cacheControl = `${PAGE_CACHE}, max-age=${ctx.services.config.cacheMaxAge}`;
    return bufferedResponse(null, { status: 304, headers: { etag: body.etag, 'cache-control': cacheControl, ...(headers.vary === undefined ? {} : { vary: headers.vary }) } });
  }
  return bufferedResponse(body.bytes, {
    status: 200,
    headers: { 'content-type': body.type, 'content-length': String(body.bytes.byteLength), etag: body.etag, 'x-content-type-options': 'nosniff', ...headers },
  });
}
