/**
 * One HTTP request through node:http rather than fetch, for what fetch cannot
 * do: send a request target exactly as written (fetch resolves `/.` to `/`),
 * choose the client's address (`localAddress`, any of 127.0.0.0/8 on Linux),
 * read a compressed body's bytes as they came, or talk to a server other than
 * the test's own (a worker of a cluster, HAProxy, nginx).
 */
import { request, type IncomingHttpHeaders } from 'node:http';

/** What came back: the status, the header fields as node:http gives them, the body's bytes and their text. */
export interface RawAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  readonly text: string;
}

export interface RawRequest {
  /** The request target as sent, instead of the path of `url`. */
  readonly path?: string;
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly body?: string;
  /** The client's address (127.0.0.2, 127.0.0.3…). */
  readonly localAddress?: string;
}

/**
 * Sends one request to `url` on a connection of its own (`agent: false`, so
 * `Connection: close`: any worker of a cluster may take it) and reads the
 * whole answer, body decoded by nothing.
 *
 * @example
 * const { status, text } = await rawRequest(t.url, { path: '/v1/products/1', localAddress: '127.0.0.2' });
 */
export function rawRequest(url: string, options: RawRequest = {}): Promise<RawAnswer> {
  const { path, method = 'GET', headers = {}, body, localAddress } = options;
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        headers,
        agent: false,
        ...(path === undefined ? {} : { path }),
        ...(localAddress ? { localAddress } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const bytes = Buffer.concat(chunks);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: bytes, text: bytes.toString('utf8') });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
