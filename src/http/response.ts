/**
 * A web-standard `Response` whose body is already bytes in memory, built
 * without a web stream. Handlers and the pipeline see a `Response` (its
 * prototype is `Response.prototype`, so `instanceof Response` holds); its
 * `status` is a plain field; any other part (`body`, `json()`, `clone()`…)
 * builds the real undici `Response` on first use. The node bridge writes
 * `contentOf(response)` to the socket as it is, and the response policy
 * (`finish()`) hashes it without reading it back: the representation is
 * serialized once and never copied (the approach of `@hono/node-server`'s
 * lightweight response).
 *
 * Its header fields live in a plain map until something reaches for
 * `headers`: the pipeline reads and sets them through `fieldsOf()`, which
 * skips the `Headers` class's per-call validation (every value it sets is
 * its own, or checked where it comes from the client); node's `writeHead`
 * still checks every name and value before anything is sent.
 */

import { delegateToReal } from './lazy.ts';

/** What `new Headers()` takes. */
type HeadersInit = ConstructorParameters<typeof Headers>[0];

/** The part of `Headers` the pipeline uses; a `Headers` is one. */
export interface Fields {
  get(name: string): string | null;
  has(name: string): boolean;
  set(name: string, value: string): void;
  append(name: string, value: string): void;
  delete(name: string): void;
  forEach(callback: (value: string, name: string) => void): void;
}

/** Header fields by lower-case name, with `Headers`' semantics for repeated fields (values joined by ", "). */
class FieldMap implements Fields {
  readonly #map = new Map<string, string>();

  constructor(init: HeadersInit) {
    if (init === undefined) return;
    if (init instanceof Headers || init instanceof FieldMap)
      init.forEach((value, name) => {
        this.append(name, value);
      });
    else if (Array.isArray(init))
      for (const [name, value] of init as Iterable<[string, string]>) this.append(name, value);
    else for (const [name, value] of Object.entries(init as Record<string, string>)) this.append(name, value);
  }

  get(name: string): string | null {
    return this.#map.get(name.toLowerCase()) ?? null;
  }

  has(name: string): boolean {
    return this.#map.has(name.toLowerCase());
  }

  set(name: string, value: string): void {
    this.#map.set(name.toLowerCase(), value);
  }

  append(name: string, value: string): void {
    const key = name.toLowerCase();
    const held = this.#map.get(key);
    this.#map.set(key, held === undefined ? value : `${held}, ${value}`);
  }

  delete(name: string): void {
    this.#map.delete(name.toLowerCase());
  }

  forEach(callback: (value: string, name: string) => void): void {
    // The map's own forEach gives (value, name) as they are: no entry array per field.
    this.#map.forEach((value, name) => {
      callback(value, name);
    });
  }
}

/** The statuses that never carry content (RFC 9110 §6.4.1); undici refuses a body on them. */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

export class BufferedResponse {
  readonly status: number;
  readonly content: Uint8Array | null;
  #fields: FieldMap | undefined;
  #headers: Headers | undefined;
  #real: Response | undefined;

  constructor(content: Uint8Array | null, init: { readonly status?: number; readonly headers?: HeadersInit } = {}) {
    this.status = init.status ?? 200;
    this.content = NULL_BODY.has(this.status) ? null : content;
    this.#fields = new FieldMap(init.headers);
  }

  /** The fields as `Headers`: built on first use, and from then on the only copy. */
  get headers(): Headers {
    if (this.#headers === undefined) {
      const headers = new Headers();
      this.#fields?.forEach((value, name) => {
        headers.append(name, value);
      });
      this.#headers = headers;
      this.#fields = undefined;
    }
    return this.#headers;
  }

  /** The fields, without building `Headers` when they have not been reached for. */
  fields(): Fields {
    return this.#headers ?? (this.#fields as FieldMap);
  }

  get ok(): boolean {
    return this.status >= 200 && this.status <= 299;
  }

  get statusText(): string {
    return '';
  }

  /** The real `Response`, built once, from the fields as they are at that moment. */
  real(): Response {
    this.#real ??= new Response(this.content, { status: this.status, headers: this.headers });
    return this.#real;
  }
}

// Every other member of Response reads the real one.
delegateToReal(BufferedResponse, Response, ['status']);

/** A response of `content` (bytes in memory) that is a `Response` to everyone and costs no stream. */
export function bufferedResponse(
  content: Uint8Array | null,
  init?: { readonly status?: number; readonly headers?: HeadersInit | Fields },
): Response {
  return new BufferedResponse(content, init as { status?: number; headers?: HeadersInit }) as unknown as Response;
}

/**
 * The bytes of a response built by `bufferedResponse()` (`null`: no content),
 * or `undefined` when its body is a stream that must be read.
 */
export function contentOf(response: Response): Uint8Array | null | undefined {
  return (response as unknown) instanceof BufferedResponse
    ? (response as unknown as BufferedResponse).content
    : undefined;
}

/** The header fields of `response`, to read and change: its `Headers`, or a buffered response's cheaper map. */
export function fieldsOf(response: Response): Fields {
  return (response as unknown) instanceof BufferedResponse
    ? (response as unknown as BufferedResponse).fields()
    : response.headers;
}
