/**
 * The thin layer between `node:http` and web-standard `Request`/`Response`.
 * It knows nothing of routes or problems: it turns an `IncomingMessage` into
 * a `Request` that builds its parts only when they are reached for (its body
 * streams from the socket), and writes the `Response` back: bytes in memory
 * straight to the socket, any other body streamed. Body limits, time-outs
 * and errors are the handler's business.
 * The request side (the lazy `Request`, its fields) is src/http/incoming-request.ts.
 */
import { createServer, ServerResponse, type IncomingMessage, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { contentOf, fieldsOf } from './response.ts';
import { IncomingRequest, originForm } from './incoming-request.ts';

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
   * contract §1 shutdown: stops accepting; closes at once every connection with
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
  // Per connection, the request being served (its answer written past the budget or not): the next waits.
  const turns = new WeakMap<Socket, Promise<void>>();
  const server = createServer({ requestTimeout: options.requestTimeoutMs }, (req, res) => {
    const socket = req.socket;
    settle(socket, +1);
    res.once('close', () => settle(socket, -1));
    // contract §11: a client that has more requests waiting on one connection than any client that
    // reads its answers would is cut off, with them: node parses a whole read (64 KiB, some thousands of
    // small pipelined requests) at once, and each would hold its request and response objects until served.
    if ((connections.get(socket) ?? 0) > MAX_PIPELINED) {
      socket.destroy();
      return;
    }
    const run = () =>
      serve(handler, req, res, () => closing).catch((error: unknown) => {
        // Only a failure to write the response lands here (the client went away
        // mid-body, say): the handler itself never throws.
        res.destroy(error instanceof Error ? error : new Error(String(error)));
      });
    // contract §11: a pipelined request starts only once the answer before it is written down to
    // PIPELINE_BUDGET bytes; meanwhile the connection is not read, so what a client sends without
    // reading is never turned into more work or memory than one read's worth of requests.
    const previous = turns.get(socket);
    let turn: Promise<void>;
    if (previous === undefined) {
      turn = run().then(() => written(res));
    } else {
      socket.pause();
      turn = previous.then(() => {
        socket.resume();
        return run().then(() => written(res));
      });
    }
    turns.set(socket, turn);
    turn.then(() => {
      if (turns.get(socket) === turn) turns.delete(socket);
    });
  });
  server.on('connection', (socket: Socket) => {
    connections.set(socket, 0);
    socket.once('close', () => connections.delete(socket));
  });
  // Node hands a CONNECT request over as a bare socket, and without this
  // listener drops it; contract §5 wants it answered like any other method.
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

async function serve(
  handler: FetchHandler,
  req: IncomingMessage,
  res: ServerResponse,
  closing: () => boolean,
): Promise<void> {
  const target = req.url ?? '';
  const origin = originForm(target);
  const path = origin?.split('?', 1)[0] ?? target;
  // Anything but origin- or absolute-form gets a URL path that routes nowhere.
  const request = new IncomingRequest(req, origin ?? '/\u0000invalid-target') as unknown as Request;
  const response = await handler(request, { remoteAddress: req.socket.remoteAddress ?? '', path });
  const streamed = writeResponse(req, res, response, closing());
  if (streamed !== undefined) await streamed;
}

/**
 * Writes `response` to `res`: at once when its bytes are in memory (every
 * JSON response), else a promise of its streamed body written out.
 */
function writeResponse(
  req: IncomingMessage,
  res: ServerResponse,
  response: Response,
  closing: boolean,
): Promise<void> | undefined {
  // The fields as node's flat list (name, value, name, value…): no object
  // keyed by field names to build for each response.
  const fields: string[] = [];
  let length = false;
  fieldsOf(response).forEach((value, name) => {
    if (name === 'content-length') length = true;
    fields.push(name, value);
  });
  // A body the handler did not read to the end (a 413, say) leaves the
  // connection in an unknown state, and a server shutting down ends it:
  // close the connection after this response.
  if (closing || (!req.complete && req.method !== 'GET' && req.method !== 'HEAD')) fields.push('connection', 'close');
  const noContent = req.method === 'HEAD' || response.status === 204 || response.status === 304;
  // Bytes in memory go to the socket as they are, in one write with the head: no web stream.
  const content = contentOf(response);
  if (content !== undefined) {
    if (content !== null && !length) fields.push('content-length', String(content.byteLength));
    res.writeHead(response.status, fields);
    if (content === null || noContent) res.end();
    else res.end(content);
    return undefined;
  }
  res.writeHead(response.status, fields);
  return streamBody(res, response.body, noContent);
}

async function streamBody(res: ServerResponse, body: ReadableStream | null, noContent: boolean): Promise<void> {
  if (body === null || noContent) {
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

/** contract §11: the most requests a connection may have waiting for their answers (pipelined) at once. */
export const MAX_PIPELINED = 64;

/** contract §11: how much of an answer may stay unwritten when the connection's next request starts. */
export const PIPELINE_BUDGET = 64 * 1024;

/**
 * Resolves once at most `PIPELINE_BUDGET` bytes of `res` are still to be
 * handed to the operating system (`writableLength`: its own queue and its
 * socket's), or it is done or gone.
 */
function written(res: ServerResponse): Promise<void> {
  if (res.writableFinished || res.destroyed || res.writableLength <= PIPELINE_BUDGET) return Promise.resolve();
  return new Promise((resolve) => {
    const check = () => {
      if (!(res.writableFinished || res.destroyed || res.writableLength <= PIPELINE_BUDGET)) return;
      res.socket?.off('drain', check);
      res.off('finish', check);
      res.off('close', check);
      resolve();
    };
    // The socket's drain: the OutgoingMessage passes it on only to a writer that saw write() refuse.
    res.socket?.on('drain', check);
    res.once('finish', check);
    res.once('close', check);
  });
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
