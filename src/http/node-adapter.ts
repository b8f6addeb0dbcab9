/**
 * The thin layer between `node:http` and web-standard `Request`/`Response`, which knows nothing of routes or
 * problems: bytes in memory go straight to the socket, any other body is streamed. Body limits, time-outs and
 * errors are the handler's. The request side is incoming-request.ts; connections beyond one request, connections.ts.
 */
import { createServer, ServerResponse, type IncomingMessage, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { fieldLines, heldOf } from './response.ts';
import { IncomingRequest, originForm } from './incoming-request.ts';
import { Client, type ClientInfo } from './client-info.ts';
import {
  capConnections,
  type ConnectionCaps,
  drainable,
  HEADERS_TIMEOUT_MS,
  KEEP_ALIVE_TIMEOUT_MS,
  LINGER_MS,
  lingeringClose,
  MAX_PIPELINED,
  pipelineTurns,
} from './connections.ts';

export type FetchHandler = (request: Request, client: ClientInfo) => Promise<Response>;

export interface NodeServerOptions extends ConnectionCaps {
  /** Node's own cap on receiving one whole request, a backstop for the handler's own time-outs. */
  readonly requestTimeoutMs: number;
  /** contract §11: a connection that has not sent a whole request head within this is answered 408 and closed. */
  readonly headersTimeoutMs?: number;
  /** How long a connection ended with its body unread lingers at most (`LINGER_MS`); tests lengthen it. */
  readonly lingerMs?: number;
}

export interface NodeServer {
  readonly server: Server;
  /**
   * Shutdown (contract §1): stops accepting; closes every connection with no request in progress, even one that sent
   * none yet (`closeIdleConnections()` leaves those); ends the others after their last response (`Connection: close`).
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
  const isClosing = () => closing;
  const settle = (socket: Socket, change: number) => {
    // A closed socket is gone from the table (its 'close' comes before its last response's): never add it back.
    const current = connections.get(socket);
    if (current === undefined) return;
    const busy = current + change;
    connections.set(socket, busy);
    idle.delete(socket);
    if (busy === 0 && change < 0) idle.add(socket);
    if (closing && busy === 0) socket.destroySoon();
  };
  /** Keep-alive connections between two requests, the longest idle first. */
  const idle = new Set<Socket>();
  const inTurn = pipelineTurns();
  const onRequest = (req: IncomingMessage, res: ServerResponse, expectsContinue: boolean) => {
    const socket = req.socket;
    settle(socket, +1);
    const client = new Client(req, healthOnly.has(socket));
    // 'close' comes once: `on` spares the wrapper `once` makes.
    res.on('close', () => {
      settle(socket, -1);
      if (!res.writableFinished) client.left();
    });
    // A client with more requests waiting than one that reads its answers would is cut off, with them: node
    // parses a whole read (64 KiB: thousands of small requests) at once, each holding its objects until served.
    if ((connections.get(socket) ?? 0) > MAX_PIPELINED) {
      socket.destroy();
      return;
    }
    const run = () =>
      serve(handler, client, req, res, expectsContinue, isClosing, options.lingerMs).catch((error: unknown) => {
        // Only a failed write lands here (the client went mid-body, say): the handler itself never throws.
        res.destroy(error instanceof Error ? error : new Error(String(error)));
      });
    inTurn(socket, res, run);
  };
  const server = createServer(
    {
      requestTimeout: options.requestTimeoutMs,
      headersTimeout: Math.min(options.headersTimeoutMs ?? HEADERS_TIMEOUT_MS, options.requestTimeoutMs),
      // How often node looks for connections past those times (its default, 30 s, would let one stay 40 s).
      connectionsCheckingInterval: 1_000,
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    },
    (req, res) => onRequest(req, res, false),
  );
  // RFC 9110 §10.1.1: a client that asks for 100 Continue sends its body only once told to; it is told when the
  // body stage starts reading, so a request refused from its head alone (401, 413, 429…) never gets the body.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => onRequest(req, res, true));
  const healthOnly = new WeakSet<Socket>();
  const admit = capConnections(server, options, {
    closeOldest() {
      const oldest = idle.values().next().value;
      if (oldest === undefined) return false;
      idle.delete(oldest);
      oldest.destroy();
      return true;
    },
  });
  server.on('connection', (socket: Socket) => {
    const admitted = admit(socket);
    if (admitted === false) return;
    if (admitted === 'health') healthOnly.add(socket);
    connections.set(socket, 0);
    socket.once('close', () => {
      connections.delete(socket);
      idle.delete(socket);
    });
  });
  // Node hands CONNECT over as a bare socket, dropped without this listener; contract §5 answers it like any method.
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    socket.on('error', () => socket.destroy());
    const res = new ServerResponse(req);
    res.assignSocket(socket);
    res.shouldKeepAlive = false;
    settle(socket, +1);
    res.once('close', () => settle(socket, -1));
    res.once('finish', () => socket.destroySoon());
    serve(handler, new Client(req), req, res, false, () => true).catch(() => socket.destroy());
  });
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

function serve(
  handler: FetchHandler,
  client: Client,
  req: IncomingMessage,
  res: ServerResponse,
  expectsContinue: boolean,
  closing: () => boolean,
  lingerMs = LINGER_MS,
): Promise<void> {
  const target = req.url ?? '';
  const origin = originForm(target);
  const query = origin?.indexOf('?') ?? -1;
  const path = origin === undefined ? target : query < 0 ? origin : origin.slice(0, query);
  let started = false;
  const beforeBody = () => {
    if (started) return;
    started = true;
    if (expectsContinue) res.writeContinue();
  };
  // Anything but origin- or absolute-form gets a URL path that routes nowhere.
  const request = new IncomingRequest(req, origin ?? '/\u0000invalid-target', beforeBody);
  client.path = path;
  // Not an async function: a request waiting for its answer holds one callback here, not a suspended frame. A
  // handler that throws at once is answered as one that rejects.
  let answer: Promise<Response>;
  try {
    answer = handler(request as unknown as Request, client);
  } catch (error) {
    return Promise.reject(error);
  }
  return answer.then((response) => {
    // A body left unread is drained only if never touched, small and on its way (no 100 Continue awaited); else the
    // connection ends with this answer, as it must after a body whose reading stopped midway (refused).
    const keep = req.complete || (!started && !expectsContinue && drainable(req));
    if (!keep) lingeringClose(req.socket, lingerMs);
    // A connection of the health reserve serves one answer, then goes: the room is for the next check.
    return writeResponse(req, res, response, closing() || !keep || client.healthOnly);
  });
}

/** Writes `response`: at once when its bytes are in memory, else a promise of its streamed body written out. */
function writeResponse(
  req: IncomingMessage,
  res: ServerResponse,
  response: Response,
  close: boolean,
): Promise<void> | undefined {
  // Node's flat list of fields (name, value, …): no object keyed by names to build for each response.
  const fields = fieldLines(response);
  if (close && !hasLine(fields, 'connection')) fields.push('connection', 'close');
  const noContent = req.method === 'HEAD' || response.status === 204 || response.status === 304;
  // Content in memory goes to the socket as it is, in one write with the head: no web stream. A text whose bytes
  // nothing needed goes as the text: node joins it to the head and writes one string.
  const held = heldOf(response);
  if (held !== undefined) {
    if (!held.empty && !hasLine(fields, 'content-length')) fields.push('content-length', String(held.size));
    res.writeHead(response.status, fields);
    if (held.empty || noContent) res.end();
    else res.end(held.unencoded ?? held.content);
    return undefined;
  }
  res.writeHead(response.status, fields);
  return streamBody(res, response.body, noContent);
}

/** Whether the flat list `fields` has field `name` (lower case). */
function hasLine(fields: readonly string[], name: string): boolean {
  for (let i = 0; i < fields.length; i += 2) if (fields[i] === name) return true;
  return false;
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
