/**
 * What a request's handler is told of its client by the node bridge (node-adapter.ts): the peer's address, the
 * path as sent, and its going away before the answer was written.
 */
import type { IncomingMessage } from 'node:http';

export interface ClientInfo {
  /** The peer's address, for per-client rate limits and logs. */
  readonly remoteAddress: string;
  /**
   * The path of the request target exactly as it arrived: not decoded, its
   * dot-segments and backslashes left in place (URL parsing resolves them in
   * `request.url`), so that routing sees what the client sent. A target that
   * is no path (`*`, `host:443`) is given as it is. Absent for a `Request`
   * that came from elsewhere: then the path of `request.url`.
   */
  readonly path?: string;
  /**
   * Calls `listener` once if the client goes away (its connection closes) before this request's answer was
   * written (contract §17: the request gives up); a later call replaces it. Absent for a `Request` that came
   * from elsewhere.
   */
  gone?(listener: () => void): void;
  /**
   * contract §11: the connection was admitted past the process's cap, into the reserve kept for health checks:
   * only `/healthz` and `/readyz` are served on it (anything else is 503), and it closes after its answer.
   */
  readonly healthOnly?: boolean;
}

/**
 * What the handler is told of the client of one request: its address, the path as sent, and (`gone`) its going
 * away before the answer was written, which the request's 'close' tells (`left()`). A class: every request makes
 * one, with no closure of its own.
 */
export class Client implements ClientInfo {
  readonly remoteAddress: string;
  path = '';
  #listener: (() => void) | undefined;

  constructor(
    req: IncomingMessage,
    readonly healthOnly = false,
  ) {
    this.remoteAddress = req.socket.remoteAddress ?? '';
  }

  gone(listener: () => void): void {
    this.#listener = listener;
  }

  left(): void {
    const listener = this.#listener;
    this.#listener = undefined;
    listener?.();
  }
}
