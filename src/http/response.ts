/**
 * A web-standard `Response` whose body is already bytes in memory, built
 * without a web stream. Handlers and the pipeline see a `Response` (its
 * prototype is `Response.prototype`, so `instanceof Response` holds); its
 * `status` and `headers` are plain fields; any other part (`body`, `json()`,
 * `clone()`…) builds the real undici `Response` on first use. The node bridge
 * writes `contentOf(response)` to the socket as it is, and the response
 * policy (`finish()`) hashes it without reading it back: the representation
 * is serialized once and copied never (the approach of `@hono/node-server`'s
 * lightweight response).
 */

/** What `new Headers()` takes. */
type HeadersInit = ConstructorParameters<typeof Headers>[0];

/** The statuses that never carry content (RFC 9110 §6.4.1); undici refuses a body on them. */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

export class BufferedResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly content: Uint8Array | null;
  #real: Response | undefined;

  constructor(content: Uint8Array | null, init: { readonly status?: number; readonly headers?: HeadersInit } = {}) {
    this.status = init.status ?? 200;
    this.headers = new Headers(init.headers);
    this.content = NULL_BODY.has(this.status) ? null : content;
  }

  get ok(): boolean {
    return this.status >= 200 && this.status <= 299;
  }

  get statusText(): string {
    return '';
  }

  /** The real `Response`, built once, from the headers as they are at that moment. */
  real(): Response {
    this.#real ??= new Response(this.content, { status: this.status, headers: this.headers });
    return this.#real;
  }
}

// Every other member of Response reads the real one, so that the object is a
// whole Response whatever Node's undici adds (`bytes()` in newer releases).
Object.setPrototypeOf(BufferedResponse.prototype, Response.prototype);
for (const name of Object.getOwnPropertyNames(Response.prototype)) {
  if (name === 'constructor' || Object.hasOwn(BufferedResponse.prototype, name) || name === 'status' || name === 'headers') continue;
  const descriptor = Object.getOwnPropertyDescriptor(Response.prototype, name) as PropertyDescriptor;
  if (descriptor.get !== undefined) {
    Object.defineProperty(BufferedResponse.prototype, name, {
      configurable: true,
      get(this: BufferedResponse) {
        return Reflect.get(Response.prototype, name, this.real());
      },
    });
  } else if (typeof descriptor.value === 'function') {
    const method = descriptor.value as (...args: unknown[]) => unknown;
    Object.defineProperty(BufferedResponse.prototype, name, {
      configurable: true,
      writable: true,
      value(this: BufferedResponse, ...args: unknown[]) {
        return method.apply(this.real(), args);
      },
    });
  }
}

/** A response of `content` (bytes in memory) that is a `Response` to everyone and costs no stream. */
export function bufferedResponse(content: Uint8Array | null, init?: { readonly status?: number; readonly headers?: HeadersInit }): Response {
  return new BufferedResponse(content, init) as unknown as Response;
}

/**
 * The bytes of a response built by `bufferedResponse()` (`null`: no content),
 * or `undefined` when its body is a stream that must be read.
 */
export function contentOf(response: Response): Uint8Array | null | undefined {
  return response instanceof BufferedResponse ? (response as BufferedResponse).content : undefined;
}
