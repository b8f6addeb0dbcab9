/**
 * One webhook POST over node:http(s), with the address pinned by a checking
 * `lookup` (targets.ts), no redirects followed, and one deadline over the
 * lookup, the connection and the response.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { isPrivateAddress, publicOnlyLookup } from './targets.ts';

export interface PostResult {
  readonly status: number | null;
  readonly error: string | null;
}

export function postJson(url: string, headers: Record<string, string>, body: string, options: { timeoutMs: number; allowPrivate: boolean; signal: AbortSignal }): Promise<PostResult> {
  return new Promise((resolve) => {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      resolve({ status: null, error: 'the endpoint URL does not parse' });
      return;
    }
    const host = target.hostname.replace(/^\[|\]$/g, '');
    // A literal address never reaches the lookup: check it here.
    if (!options.allowPrivate && isIP(host) !== 0 && isPrivateAddress(host)) {
      resolve({ status: null, error: 'target refused: a private, loopback or link-local address' });
      return;
    }
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const signal = AbortSignal.any([options.signal, AbortSignal.timeout(options.timeoutMs)]);
    const req = send(target, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      lookup: publicOnlyLookup(options.allowPrivate),
      signal,
    }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? null, error: null }));
      res.on('error', (error) => resolve({ status: res.statusCode ?? null, error: error.message }));
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      resolve({ status: null, error: signal.aborted ? `no answer within ${options.timeoutMs} ms (or shutting down)` : `${error.code ?? error.name}: ${error.message}` });
    });
    req.end(body);
  });
}
