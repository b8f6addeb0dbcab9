/**
 * The request side of the node bridge: a `Request` over an `IncomingMessage` that builds its costly parts only
 * when reached for, and its fields read as `Headers.get()` gives them, in time linear in their length. Only the
 * pipeline reads fields through here (`fieldOf()`); handlers get them from the request context.
 */
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { type BodySource, ClientAbortError, streamSource } from './body.ts';
import { delegateToReal } from './lazy.ts';

/** Hosts and schemes are never trusted from the client: the URL only carries the path and query. */
const BASE = 'http://localhost';
/** RFC 9112 §3.2.2: the scheme and authority of an absolute-form target. */
const ABSOLUTE_FORM = /^https?:\/\/[^/?#]*/i;
/** Methods undici refuses in a `Request`: built under a stand-in, the real one put back, so they are answered too. */
const FORBIDDEN_METHODS: ReadonlySet<string> = new Set(['CONNECT', 'TRACE', 'TRACK']);

/** The origin-form of a target (RFC 9112 §3.2.1), also of an absolute-form one (§3.2.2: a server must accept it). */
export function originForm(target: string): string | undefined {
  if (target.startsWith('/')) return target;
  const authority = ABSOLUTE_FORM.exec(target);
  if (authority === null) return undefined;
  const rest = target.slice(authority[0].length);
  return rest.startsWith('/') ? rest : `/${rest}`;
}

/**
 * A `Request` over a node request (the approach of `@hono/node-server`): `method` and `url` are fields, `headers`
 * and `body` are made on first use, and any other member builds the real undici `Request`. A GET whose fields are
 * read with `fieldOf()` builds neither `Headers` nor a `Request`.
 */
export class IncomingRequest {
  readonly method: string;
  readonly url: string;
  readonly #req: IncomingMessage;
  readonly #beforeBody: (() => void) | undefined;
  #fields: Map<string, string> | undefined;
  #headers: Headers | undefined;
  #body: ReadableStream<Uint8Array> | null | undefined;
  #real: Request | undefined;

  /** `beforeBody`: called once as the body starts to be read (the bridge sends `100 Continue` then). */
  constructor(req: IncomingMessage, target: string, beforeBody?: () => void) {
    this.#req = req;
    this.#beforeBody = beforeBody;
    this.method = req.method ?? 'GET';
    this.url = BASE + target;
  }

  /** The body piece by piece, none kept, or `null`; nothing is read, nor `100 Continue` sent, before `pump()`. */
  bodySource(): BodySource | null {
    const method = this.method;
    if (method === 'GET' || method === 'HEAD' || method === 'CONNECT') return null;
    const req = this.#req;
    // RFC 9112 §6.3: a request with neither Content-Length nor Transfer-Encoding has no content.
    if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) return null;
    const beforeBody = this.#beforeBody;
    return {
      pump(onPiece) {
        let stop = () => {};
        const done = new Promise<void>((resolve, reject) => {
          const onEnd = () => {
            detach();
            resolve();
          };
          const onClose = () => {
            if (req.complete) return;
            detach();
            reject(new ClientAbortError(new Error('the connection closed before the end of the body')));
          };
          const onError = (error: Error) => {
            detach();
            reject(new ClientAbortError(error));
          };
          const detach = () => {
            req.off('data', onPiece);
            req.off('end', onEnd);
            req.off('close', onClose);
            req.off('error', onError);
          };
          stop = () => {
            detach();
            // Nothing more is read from the socket than what one read already holds: the answer closes it.
            req.pause();
            resolve();
          };
          req.on('data', onPiece);
          req.on('end', onEnd);
          req.on('close', onClose);
          req.on('error', onError);
        });
        beforeBody?.();
        return { done, stop: () => stop() };
      },
    };
  }

  /**
   * Field `name` (lower case) as `Headers.get` gives it, or `null`. A value undici refuses (a control character
   * node's parser let through) is skipped, as RFC 9110 §5.5 allows.
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

  /** The body as a web stream: reaching for it starts the body (`beforeBody`). The pipeline reads `bodySource()`. */
  get body(): ReadableStream<Uint8Array> | null {
    // RFC 9110 §9.3.6: a CONNECT request has no content (node has handed the socket over).
    const method = this.method;
    if (this.#body === undefined) {
      const none = method === 'GET' || method === 'HEAD' || method === 'CONNECT';
      if (!none) this.#beforeBody?.();
      this.#body = none ? null : (Readable.toWeb(this.#req) as ReadableStream<Uint8Array>);
    }
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

delegateToReal(IncomingRequest, Request, ['method', 'url']);

/** `request.headers.get(name)` (`name` in lower case), without building `Headers` when it can. */
export function fieldOf(request: Request, name: string): string | null {
  return (request as unknown) instanceof IncomingRequest
    ? (request as unknown as IncomingRequest).field(name)
    : request.headers.get(name);
}

/** The body of `request` as a `BodySource` (nothing read yet), or `null` when it has none. */
export function bodySourceOf(request: Request): BodySource | null {
  if ((request as unknown) instanceof IncomingRequest) return (request as unknown as IncomingRequest).bodySource();
  return request.body === null ? null : streamSource(request.body);
}

// Fetch's header value rules: no NUL, CR or LF inside.
const REFUSED_VALUE = /[\0\r\n]/;

/**
 * `value` without its leading and trailing HTTP whitespace, in time linear in its length (contract §11): a regular
 * expression such as `/^\s+|\s+$/g` tries its second branch at every position of a run of blanks inside the value.
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
