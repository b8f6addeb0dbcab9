/**
 * The thin layer between `node:http` and web-standard `Request`/`Response`.
 * It knows nothing of routes or problems: it turns an `IncomingMessage` into
 * a `Request` whose body streams from the socket, and streams the `Response`
 * back. Body limits, time-outs and errors are the handler's business.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Readable } from 'node:stream';

export interface ClientInfo {
  /** The peer's address, for per-client rate limits and logs. */
  readonly remoteAddress: string;
}

export type FetchHandler = (request: Request, client: ClientInfo) => Promise<Response>;

export interface NodeServerOptions {
  /** Node's own cap on receiving one whole request, a backstop for the handler's own time-outs. */
  readonly requestTimeoutMs: number;
}

/** Creates a `node:http` server that answers every request with `handler`. */
export function createNodeServer(handler: FetchHandler, options: NodeServerOptions): Server {
  const server = createServer({ requestTimeout: options.requestTimeoutMs }, (req, res) => {
    serve(handler, req, res).catch((error: unknown) => {
      // Only a failure to write the response lands here (the client went away
      // mid-body, say): the handler itself never throws.
      res.destroy(error instanceof Error ? error : new Error(String(error)));
    });
  });
  server.keepAliveTimeout = 5_000;
  return server;
}

async function serve(handler: FetchHandler, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const request = toRequest(req);
  const response = await handler(request, { remoteAddress: req.socket.remoteAddress ?? '' });
  await writeResponse(req, res, response);
}

/** Hosts and schemes are never trusted from the client: the URL only carries the path and query. */
const BASE = 'http://localhost';

function toRequest(req: IncomingMessage): Request {
  const method = req.method ?? 'GET';
  // Request-target origin-form (RFC 9112 §3.2.1); anything else gets a path that routes nowhere.
  const target = req.url?.startsWith('/') ? req.url : '/\u0000invalid-target';
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    try {
      headers.append(req.rawHeaders[i] as string, req.rawHeaders[i + 1] as string);
    } catch {
      // A header value undici refuses (a lone control character): node's parser
      // let it through, but no handler can use it. Skip it, as RFC 9110 §5.5 allows.
    }
  }
  const hasBody = method !== 'GET' && method !== 'HEAD';
  return new Request(BASE + target, {
    method,
    headers,
    ...(hasBody ? { body: Readable.toWeb(req) as ReadableStream<Uint8Array>, duplex: 'half' } : {}),
  } as RequestInit);
}

async function writeResponse(req: IncomingMessage, res: ServerResponse, response: Response): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  // A body the handler did not read to the end (a 413, say) leaves the
  // connection in an unknown state: close it after this response.
  if (!req.complete && req.method !== 'GET' && req.method !== 'HEAD') headers['connection'] = 'close';
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
