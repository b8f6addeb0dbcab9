/**
 * Content codings (contract §16; rules in src/http/compression.ts): a coded answer has its own strong `ETag`, and
 * HEAD gets GET's fields. Every answer with content, and every 304, says `Vary: Accept-Encoding`, identity too (a
 * page under the threshold today may pass it tomorrow). Outside the fields stage, every answer passes it, errors
 * and replays included: a replay is stored as identity and coded for the client that asks again.
 */
import {
  codedTag,
  type Coding,
  encoded,
  isCompressible,
  MIN_CODED_BYTES,
  negotiateCoding,
} from '../../http/compression.ts';
import { parseTagList, type TagList } from '../../http/conditional.ts';
import { varyWith } from '../../http/cors.ts';
import { bufferedResponse, contentOf, type Fields, fieldsOf } from '../../http/response.ts';
import type { Answer } from '../answer.ts';
import type { Stage } from '../compose.ts';
import type { Exchange } from '../exchange.ts';

export function compression(): Stage<Exchange, Answer> {
  return async (x, next) => {
    const answer = await next(x);
    const { response } = answer;
    const { status } = response;
    const content = contentOf(response);
    // 204 and 1xx carry nothing to code; a streamed body (none today) goes as it is.
    if (status !== 304 && (content === null || content === undefined)) return answer;
    const headers = fieldsOf(response);
    headers.set('vary', varyWith(headers.get('vary'), ACCEPT_ENCODING));
    if (status === 304) {
      // A 304 comes of a well-formed If-None-Match (a malformed one is 400), read again here; one that is the
      // tag itself (the usual case) leaves nothing to choose.
      const sent = x.header('if-none-match');
      if (sent !== headers.get('etag'))
        retag(headers, parseTagList(sent) ?? null, negotiateCoding(x.header('accept-encoding')));
      return answer;
    }
    const bytes = content as Uint8Array;
    // Most answers (an order, a product, an error) are under the threshold: the field is read only past it.
    if (bytes.byteLength < MIN_CODED_BYTES || headers.has('content-encoding')) return answer;
    if (!isCompressible(headers.get('content-type'))) return answer;
    const coding = negotiateCoding(x.header('accept-encoding'));
    if (coding === undefined) return answer;
    const coded = await encoded(bytes, coding);
    headers.set('content-encoding', coding);
    headers.set('content-length', String(coded.byteLength));
    const etag = headers.get('etag');
    if (etag !== null) headers.set('etag', codedTag(etag, coding));
    answer.response = bufferedResponse(coded, { status, headers });
    return answer;
  };
}

/**
 * On a 304, the tag the client holds: of its `If-None-Match` tags for the representation, the one of this
 * request's coding, else the first (RFC 9111 §4.3.4: a cache updates the stored answer of that tag).
 */
const ACCEPT_ENCODING = ['Accept-Encoding'];

function retag(headers: Fields, ifNoneMatch: TagList | null, coding: Coding | undefined): void {
  const etag = headers.get('etag');
  if (etag === null || ifNoneMatch === null || ifNoneMatch === '*') return;
  const weak = etag.startsWith('W/');
  const current = weak ? etag.slice(2) : etag;
  const variants = [current, codedTag(current, 'gzip'), codedTag(current, 'br')];
  const held = ifNoneMatch.map((tag) => tag.opaque).filter((opaque) => variants.includes(opaque));
  const preferred = coding === undefined ? current : codedTag(current, coding);
  const chosen = held.includes(preferred) ? preferred : held[0];
  if (chosen !== undefined) headers.set('etag', weak ? `W/${chosen}` : chosen);
}
