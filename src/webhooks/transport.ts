/**
 * One webhook POST over node:http(s), with the address pinned by a checking
 * `lookup` (targets.ts), no redirects followed, and one deadline over the
 * lookup, the connection, the answer's head and (for a status other than
 * 2xx) its body: an attempt ends by its time-out whatever the receiver does.
 * A 2xx is a delivery as soon as its head arrives (Standard Webhooks counts
 * any 2xx status as success): its body is never waited for, and the
 * connection is dropped.
 */
import { request as httpRequest, type ClientRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { isPrivateAddress, publicOnlyLookup } from './rules.ts';

export interface PostResult {
  /** The answer's status, once its head arrived. */
  readonly status: number | null;
  /**
   * Why the attempt did not end with an answer, or null: always null with a
   * 2xx status (settled by its head, whatever its body does), and for another
   * status null only if its body ended in time and within MAX_ANSWER_BYTES.
   */
  readonly error: string | null;
}

/**
 * The most of a non-2xx answer's body read; a longer one is cut off (the
 * status decides, not the body). A 2xx answer's body is not read at all.
 */
export const MAX_ANSWER_BYTES = 64 * 1024;

const TIMED_OUT = Symbol('timed out');
const SHUT_DOWN = Symbol('shutting down');

/**
 * POSTs `body` to `url` and reports the outcome; never rejects. A redirect
 * is an answer like any other (its 3xx status), never followed: its target
 * could be a private address or lead back round a loop.
 */
export async function postJson(
  url: string,
  headers: Record<string, string>,
  body: string,
  options: { timeoutMs: number; allowPrivate: boolean; signal: AbortSignal },
): Promise<PostResult> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return { status: null, error: 'the endpoint URL does not parse' };
  }
  const host = target.hostname.replace(/^\[|\]$/g, '');
  // A literal address never reaches the lookup: check it here.
  if (!options.allowPrivate && isIP(host) !== 0 && isPrivateAddress(host)) {
    return {
      status: null,
      error: 'target refused: a private, loopback or link-local address (WEBHOOK_ALLOW_PRIVATE=1 allows them)',
    };
  }
  // A timer held here, not AbortSignal.timeout(): a time-out signal that only
  // AbortSignal.any() refers to can be garbage-collected before it fires
  // (nodejs/node#57736), and the attempt would then never end.
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(TIMED_OUT), options.timeoutMs);
  const shutDown = () => deadline.abort(SHUT_DOWN);
  options.signal.addEventListener('abort', shutDown);
  try {
    if (options.signal.aborted) shutDown();
    return await exchange(target, headers, body, options.allowPrivate, deadline.signal, options.timeoutMs);
  } finally {
    clearTimeout(timer);
    options.signal.removeEventListener('abort', shutDown);
  }
}

function exchange(
  target: URL,
  headers: Record<string, string>,
  body: string,
  allowPrivate: boolean,
  signal: AbortSignal,
  timeoutMs: number,
): Promise<PostResult> {
  return new Promise((resolve) => {
    let status: number | null = null;
    let req: ClientRequest | undefined;
    let settled = false;
    const settle = (error: string | null, cancel: boolean) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      resolve({ status, error });
      // Drops the socket, and with it whatever the receiver still sends.
      if (cancel) req?.destroy();
    };
    const onAbort = () => {
      if (signal.reason === SHUT_DOWN) settle('aborted: the server is shutting down', true);
      else
        settle(
          status === null ? `no answer within ${timeoutMs} ms` : `the answer did not finish within ${timeoutMs} ms`,
          true,
        );
    };
    if (signal.aborted) {
      onAbort();
      return;
    }
    signal.addEventListener('abort', onAbort);
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    req = send(
      target,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        lookup: publicOnlyLookup(allowPrivate),
      },
      (res) => {
        status = res.statusCode ?? null;
        // Before anything else: even if the socket is torn down under it, `res` never emits an unheard error.
        res.on('error', (error: NodeJS.ErrnoException) =>
          settle(`${error.code ?? error.name}: ${error.message}`, true),
        );
        // A 2xx is a delivery once its head is here: whatever its body does
        // (stalls, streams for ever, runs past 64 KiB), it is not waited for,
        // and the connection goes with it (never reused half-read).
        if (status !== null && status >= 200 && status < 300) {
          settle(null, true);
          return;
        }
        let bytes = 0;
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (bytes > MAX_ANSWER_BYTES)
            settle(`the answer is longer than ${MAX_ANSWER_BYTES} bytes; not read further`, true);
        });
        res.on('end', () => settle(null, false));
        res.on('close', () =>
          settle(res.complete ? null : 'the receiver closed the connection before the answer finished', true),
        );
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => settle(`${error.code ?? error.name}: ${error.message}`, true));
    req.end(body);
  });
}
