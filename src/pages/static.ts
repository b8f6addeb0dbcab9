/**
 * Representations that never change while the process runs (the index, the
 * API reference and its files, the problem pages): their bytes, media type
 * and strong entity tag computed once, and the response for a GET or HEAD of
 * one. All are public: the same for every caller.
 */
import { markStatic } from '../http/compression.ts';
import { etagOf } from '../http/conditional.ts';
import { bufferedResponse } from '../http/response.ts';
import type { CachePolicy } from '../http/semantics.ts';

/** The `cache` of every page route; the pipeline's `finish()` turns it into `Cache-Control` on the 200. */
export const PAGE_CACHE: CachePolicy = 'public';

export const HTML_TYPE = 'text/html; charset=utf-8';

export interface StaticBody {
  readonly bytes: Uint8Array;
  /** The `Content-Type` value. */
  readonly type: string;
  /** Strong, from the bytes (contract §9). */
  readonly etag: string;
}

/**
 * `content` (text as UTF-8, or bytes) as a static representation of media
 * type `type`; its gzip and br codings are made once, when first asked for.
 */
export function staticBody(content: string | Uint8Array, type: string): StaticBody {
  const bytes = markStatic(typeof content === 'string' ? Buffer.from(content, 'utf8') : content);
  return { bytes, type, etag: etagOf(bytes) };
}

/**
 * The 200 of `body` with `headers`. A matching `If-None-Match` is answered
 * 304 by the pipeline's `finish()`, from this tag, keeping the route's own
 * `Vary` (RFC 9110 §15.4.5), as on every route.
 */
export function staticResponse(body: StaticBody, headers: Readonly<Record<string, string>> = {}): Response {
  return bufferedResponse(body.bytes, {
    status: 200,
    headers: {
      'content-type': body.type,
      'content-length': String(body.bytes.byteLength),
      etag: body.etag,
      'x-content-type-options': 'nosniff',
      ...headers,
    },
  });
}
