/** What a request's handler is told of its client by the node bridge (node-adapter.ts). */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

export interface ClientInfo {
  /** The peer's address, for per-client rate limits and logs. */
  readonly remoteAddress: string;
  /**
   * The request target's path exactly as sent: not decoded, dot-segments and backslashes left (URL parsing resolves
   * them in `request.url`), so that routing sees what the client sent; a target that is no path, as it is.
   */
  readonly path?: string;
  /** Calls `listener` once if the connection closes before this answer is written (contract §17: it gives up). */
  gone?(listener: () => void): void;
  /** Admitted into the reserve for health checks (contract §11): serves `/healthz` and `/readyz` only, then closes. */
  readonly healthOnly?: boolean;
  /** Whether the connection has closed already (the client gave up before its request was served). */
  departed?(): boolean;
}

/** The `ClientInfo` of one request; its 'close' calls `left()`. A class: every request makes one, with no closure. */
export class Client implements ClientInfo {
  readonly remoteAddress: string;
  path = '';
  #listener: (() => void) | undefined;
  readonly #socket: Socket;

  constructor(
    req: IncomingMessage,
    readonly healthOnly = false,
  ) {
    this.#socket = req.socket;
    this.remoteAddress = req.socket.remoteAddress ?? '';
  }

  departed(): boolean {
    return this.#socket.destroyed;
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
