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
import { type BufferedResponse, bufferedResponse, type Fields, fieldsOf, heldOf } from '../../http/response.ts';
import type { Answer } from '../answer.ts';
import type { Stage } from '../compose.ts';
import type { Exchange } from '../exchange.ts';

const ACCEPT_ENCODING = ['Accept-Encoding'];

export function compression(): Stage<Exchange, Answer> {
  // Not an async function: a request waiting inward holds a callback here, not a suspended frame.
  return (x, next) => next(x).then((answer) => coded(x, answer));
}

/**
 * `answer` with its `Vary`, its tag as the client asked for it, and its content coded when that is worth it (then a
 * promise: most answers are done here at once).
 */
function coded(x: Exchange, answer: Answer): Answer | Promise<Answer> {
  const { response } = answer;
  const { status } = response;
  const held = heldOf(response);
  // 204 and 1xx carry nothing to code; a streamed body (none today) goes as it is.
  if (status !== 304 && (held === undefined || held.empty)) return answer;
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
  const buffered = held as BufferedResponse;
  // Most answers (an order, a product, an error) are under the threshold: the field is read only past it.
  if (buffered.size < MIN_CODED_BYTES || headers.has('content-encoding')) return answer;
  if (!isCompressible(headers.get('content-type'))) return answer;
  const coding = negotiateCoding(x.header('accept-encoding'));
  if (coding === undefined) return answer;
  const recoded = (bytesCoded: Uint8Array): Answer => {
    headers.set('content-encoding', coding);
    headers.set('content-length', String(bytesCoded.byteLength));
    const etag = headers.get('etag');
    if (etag !== null) headers.set('etag', codedTag(etag, coding));
    answer.response = bufferedResponse(bytesCoded, { status, headers });
    return answer;
  };
  const made = encoded(buffered.content as Uint8Array, coding);
  return made instanceof Uint8Array ? recoded(made) : made.then(recoded);
}

/**
 * On a 304, the tag the client holds: of its `If-None-Match` tags for the representation, the one of this
 * request's coding, else the first (RFC 9111 §4.3.4: a cache updates the stored answer of that tag).
 */
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
