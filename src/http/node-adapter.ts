/**
 * The thin layer between `node:http` and web-standard `Request`/`Response`.
 * It knows nothing of routes or problems: it turns an `IncomingMessage` into
 * a `Request` whose body streams from the socket, and streams the `Response`
 * back. Body limits, time-outs and errors are the handler's business.
 */
import { createServer, ServerResponse, type IncomingMessage, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';

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
}

export type FetchHandler = (request: Request, client: ClientInfo) => Promise<Response>;

export interface NodeServerOptions {
  /** Node's own cap on receiving one whole request, a backstop for the handler's own time-outs. */
  readonly requestTimeoutMs: number;
}

export interface NodeServer {
  readonly server: Server;
  /**
   * SPEC §1 shutdown: stops accepting; closes at once every connection with
   * no request in progress, including one that has not sent a request yet
   * (which `closeIdleConnections()` leaves open, as it waits for headers);
   * ends every other one as soon as its last response is written, with
   * `Connection: close` on that response. Resolves when all are closed.
   */
  close(): Promise<void>;
  /** Closes every connection now, requests in progress or not. */
  closeAllConnections(): void;
  /** Connections open now (for tests and metrics). */
  readonly connections: number;
}

/** Creates a `node:http` server that answers every request with `handler`. */
export function createNodeServer(handler: FetchHandler, options: NodeServerOptions): NodeServer {
  // Every open connection, with the number of its requests whose response is not yet written.
  const connections = new Map<Socket, number>();
  let closing = false;
  const settle = (socket: Socket, change: number) => {
    // A socket that has closed is gone from the table (its 'close' comes
    // before its last response's): never add it back.
    const current = connections.get(socket);
    if (current === undefined) return;
    const busy = current + change;
    connections.set(socket, busy);
    if (closing && busy === 0) socket.destroySoon();
  };
  const server = createServer({ requestTimeout: options.requestTimeoutMs }, (req, res) => {
    const socket = req.socket;
    settle(socket, +1);
    res.once('close', () => settle(socket, -1));
    serve(handler, req, res, () => closing).catch((error: unknown) => {
      // Only a failure to write the response lands here (the client went away
      // mid-body, say): the handler itself never throws.
      res.destroy(error instanceof Error ? error : new Error(String(error)));
    });
  });
  server.on('connection', (socket: Socket) => {
    connections.set(socket, 0);
    socket.once('close', () => connections.delete(socket));
  });
  // Node hands a CONNECT request over as a bare socket, and without this
  // listener drops it; SPEC §5 wants it answered like any other method.
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    socket.on('error', () => socket.destroy());
    const res = new ServerResponse(req);
    res.assignSocket(socket);
    res.shouldKeepAlive = false;
    settle(socket, +1);
    res.once('close', () => settle(socket, -1));
    res.once('finish', () => socket.destroySoon());
    serve(handler, req, res, () => true).catch(() => socket.destroy());
  });
  server.keepAliveTimeout = 5_000;
  return {
    server,
    close() {
      closing = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const [socket, busy] of connections) if (busy === 0) socket.destroy();
      return closed;
    },
    closeAllConnections() {
      for (const socket of connections.keys()) socket.destroy();
    },
    get connections() {
      return connections.size;
    },
  };
}

async function serve(handler: FetchHandler, req: IncomingMessage, res: ServerResponse, closing: () => boolean): Promise<void> {
  const target = req.url ?? '';
  const path = originForm(target)?.split('?', 1)[0] ?? target;
  const request = toRequest(req, target);
  const response = await handler(request, { remoteAddress: req.socket.remoteAddress ?? '', path });
  await writeResponse(req, res, response, closing());
}

/** Hosts and schemes are never trusted from the client: the URL only carries the path and query. */
const BASE = 'http://localhost';
/** RFC 9112 §3.2.2: the scheme and authority of an absolute-form target. */
const ABSOLUTE_FORM = /^https?:\/\/[^/?#]*/i;
/**
 * Methods the fetch standard forbids in a `Request` (undici throws on them).
 * They are built under a stand-in method with the real one put back, so that
 * they too are answered (405 on a known path, else 404), limited and logged.
 */
const FORBIDDEN_METHODS: ReadonlySet<string> = new Set(['CONNECT', 'TRACE', 'TRACK']);

/**
 * The origin-form of a request target (RFC 9112 §3.2.1): itself, or the path
 * and query of an absolute-form target (§3.2.2, which a server must accept)
 * with its scheme and host dropped; `undefined` for the other forms.
 */
function originForm(target: string): string | undefined {
  if (target.startsWith('/')) return target;
  const authority = ABSOLUTE_FORM.exec(target);
  if (authority === null) return undefined;
  const rest = target.slice(authority[0].length);
  return rest.startsWith('/') ? rest : `/${rest}`;
}

function toRequest(req: IncomingMessage, rawTarget: string): Request {
  const method = req.method ?? 'GET';
  // Anything but origin- or absolute-form gets a URL path that routes nowhere.
  const target = originForm(rawTarget) ?? '/\u0000invalid-target';
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    try {
      headers.append(req.rawHeaders[i] as string, req.rawHeaders[i + 1] as string);
    } catch {
      // A header value undici refuses (a lone control character): node's parser
      // let it through, but no handler can use it. Skip it, as RFC 9110 §5.5 allows.
    }
  }
  // RFC 9110 §9.3.6: a CONNECT request has no content (node has handed the socket over).
  const hasBody = method !== 'GET' && method !== 'HEAD' && method !== 'CONNECT';
  const forbidden = FORBIDDEN_METHODS.has(method);
  const request = new Request(BASE + target, {
    method: forbidden ? 'POST' : method,
    headers,
    ...(hasBody ? { body: Readable.toWeb(req) as ReadableStream<Uint8Array>, duplex: 'half' } : {}),
  } as RequestInit);
  if (forbidden) Object.defineProperty(request, 'method', { value: method, enumerable: true });
  return request;
}

async function writeResponse(req: IncomingMessage, res: ServerResponse, response: Response, closing: boolean): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  // A body the handler did not read to the end (a 413, say) leaves the
  // connection in an unknown state: close it after this response.
  if (!req.complete && req.method !== 'GET' && req.method !== 'HEAD') headers['connection'] = 'close';
  // Shutting down: this connection ends after this response.
  if (closing) headers['connection'] = 'close';
  res.writeHead(response.status, headers);
  const body = response.body;
  if (body === null || req.method === 'HEAD' || response.status === 204 || response.status === 304) {
    await body?.cancel();
    res.end();
    return;
  }
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    if (res.destroyed) break;
    if (!res.write(chunk)) await drained(res);
  }
  res.end();
}

/** Resolves when `res` can take more data, or when the client has gone. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}
