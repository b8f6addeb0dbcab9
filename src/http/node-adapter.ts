/**
 * The thin layer between `node:http` and web-standard `Request`/`Response`.
 * It knows nothing of routes or problems: it turns an `IncomingMessage` into
 * a `Request` that builds its parts only when they are reached for (its body
 * streams from the socket), and writes the `Response` back: bytes in memory
 * straight to the socket, any other body streamed. Body limits, time-outs
 * and errors are the handler's business.
 */
import { createServer, ServerResponse, type IncomingMessage, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import { contentOf, fieldsOf } from './response.ts';
import { delegateToReal } from './lazy.ts';

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

/**
 * A web-standard `Request` over a node request that builds the costly parts
 * only when reached for (the approach of `@hono/node-server`): `method` and
 * `url` are plain fields; `headers` is built on first use; `body` streams
 * from the socket, made on first use; any other member (`json()`, `signal`,
 * `clone()`…) builds the real undici `Request` first. The pipeline reads
 * single fields with `fieldOf()`, which needs no `Headers` at all, so a GET
 * builds neither headers nor a `Request`.
 */
export class IncomingRequest {
  readonly method: string;
  readonly url: string;
  readonly #req: IncomingMessage;
  #fields: Map<string, string> | undefined;
  #headers: Headers | undefined;
  #body: ReadableStream<Uint8Array> | null | undefined;
  #real: Request | undefined;

  constructor(req: IncomingMessage, target: string) {
    this.#req = req;
    this.method = req.method ?? 'GET';
    this.url = BASE + target;
  }

  /**
   * The value of field `name` (lower case) as `Headers.get` gives it: the
   * values of repeated lines joined by ", ", without surrounding whitespace;
   * `null` when absent. A value undici refuses (a lone control character:
   * node's parser let it through, but no handler can use it) is skipped, as
   * RFC 9110 §5.5 allows.
   */
  field(name: string): string | null {
    this.#fields ??= requestFields(this.#req.rawHeaders);
    return this.#fields.get(name) ?? null;
  }

  get headers(): Headers {
    if (this.#headers === undefined) {
      this.#fields ??= requestFields(this.#req.rawHeaders);
      this.#headers = new Headers([...this.#fields]);
    }
    return this.#headers;
  }

  get body(): ReadableStream<Uint8Array> | null {
    // RFC 9110 §9.3.6: a CONNECT request has no content (node has handed the socket over).
    const method = this.method;
    this.#body ??=
      method === 'GET' || method === 'HEAD' || method === 'CONNECT'
        ? null
        : (Readable.toWeb(this.#req) as ReadableStream<Uint8Array>);
    return this.#body;
  }

  /** The real `Request`, built once; its body is the same stream as `body`. */
  real(): Request {
    if (this.#real === undefined) {
      const forbidden = FORBIDDEN_METHODS.has(this.method);
      const body = this.body;
      const request = new Request(this.url, {
        method: forbidden ? 'POST' : this.method,
        headers: this.headers,
        ...(body === null ? {} : { body, duplex: 'half' }),
      } as RequestInit);
      if (forbidden) Object.defineProperty(request, 'method', { value: this.method, enumerable: true });
      this.#real = request;
    }
    return this.#real;
  }
}

// Every other member of Request reads the real one.
delegateToReal(IncomingRequest, Request, ['method', 'url']);

/**
 * Field `name` (lower case) of `request`, as `request.headers.get(name)` gives it, without building `Headers` when it
 * can.
 */
export function fieldOf(request: Request, name: string): string | null {
  return (request as unknown) instanceof IncomingRequest
    ? (request as unknown as IncomingRequest).field(name)
    : request.headers.get(name);
}

// Fetch's header value rules: no NUL, CR or LF inside; leading and trailing
// HTTP whitespace removed.
const REFUSED_VALUE = /[\0\r\n]/;

/**
 * `value` without its leading and trailing HTTP whitespace (tab, line feed,
 * carriage return, space), in time linear in its length (contract §11). A
 * regular expression such as `/^\s+|\s+$/g` is not: its second branch is
 * tried at every position of a run of blanks inside the value, so `x`, 15,000
 * blanks and `y` cost it 80 ms.
 *
 * @example
 * trimField(' \ta b\r\n') // 'a b'
 */
export function trimField(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && isHttpWhitespace(value.charCodeAt(start))) start += 1;
  while (end > start && isHttpWhitespace(value.charCodeAt(end - 1))) end -= 1;
  return start === 0 && end === value.length ? value : value.slice(start, end);
}

function isHttpWhitespace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

function requestFields(raw: readonly string[]): Map<string, string> {
  const fields = new Map<string, string>();
  for (let i = 0; i < raw.length; i += 2) {
    const value = trimField(raw[i + 1] as string);
    if (REFUSED_VALUE.test(value)) continue;
    const name = (raw[i] as string).toLowerCase();
    const held = fields.get(name);
    fields.set(name, held === undefined ? value : `${held}, ${value}`);
  }
  return fields;
}

async function writeResponse(
  req: IncomingMessage,
  res: ServerResponse,
  response: Response,
  closing: boolean,
): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  fieldsOf(response).forEach((value, name) => {
    headers[name] = value;
  });
  // A body the handler did not read to the end (a 413, say) leaves the
  // connection in an unknown state: close it after this response.
  if (!req.complete && req.method !== 'GET' && req.method !== 'HEAD') headers.connection = 'close';
  // Shutting down: this connection ends after this response.
  if (closing) headers.connection = 'close';
  const noContent = req.method === 'HEAD' || response.status === 204 || response.status === 304;
  // Bytes in memory (every JSON response) go to the socket as they are, in
  // one write with the head: no web stream.
  const content = contentOf(response);
  if (content !== undefined) {
    if (content !== null && headers['content-length'] === undefined)
      headers['content-length'] = String(content.byteLength);
    res.writeHead(response.status, headers);
    if (content === null || noContent) res.end();
    else res.end(content);
    return;
  }
  res.writeHead(response.status, headers);
  const body = response.body;
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
