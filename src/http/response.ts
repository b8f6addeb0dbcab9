/**
 * A `Response` whose body is bytes in memory, built without a web stream (the approach of `@hono/node-server`'s
 * lightweight response): `instanceof Response` holds, `status` is a field, any other part builds the real undici
 * `Response`. The bridge writes `contentOf()` to the socket and `finish()` hashes it: serialized once, never copied.
 * Its fields stay in a plain map until `headers` is reached for: `fieldsOf()` skips the `Headers` class's checks
 * (every value set is the service's own, or checked where it came in); node's `writeHead` still checks them all.
 */

import { delegateToReal } from './lazy.ts';

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

/**
 * Header fields by lower-case name, with `Headers`' semantics for repeated fields (values joined by ", "), kept as
 * node's flat list (name, value, name, value…): a response's dozen fields are found faster by a scan than by a hash
 * table, cost one array instead of a map's growing tables, and go to `writeHead` as they are.
 */
class FieldMap implements Fields {
  readonly #list: string[] = [];

  constructor(init: HeadersInit) {
    if (init === undefined) return;
    if (init instanceof Headers || init instanceof FieldMap)
      init.forEach((value, name) => {
        this.append(name, value);
      });
    else if (Array.isArray(init))
      for (const [name, value] of init as Iterable<[string, string]>) this.append(name, value);
    else {
      const record = init as Record<string, string>;
      for (const name in record) if (Object.hasOwn(record, name)) this.append(name, record[name] as string);
    }
  }

  /** The index of field `key` (lower case) in the list, or -1. */
  #at(key: string): number {
    const list = this.#list;
    for (let i = 0; i < list.length; i += 2) if (list[i] === key) return i;
    return -1;
  }

  get(name: string): string | null {
    const at = this.#at(name.toLowerCase());
    return at < 0 ? null : (this.#list[at + 1] as string);
  }

  has(name: string): boolean {
    return this.#at(name.toLowerCase()) >= 0;
  }

  set(name: string, value: string): void {
    const key = name.toLowerCase();
    const at = this.#at(key);
    if (at < 0) this.#list.push(key, value);
    else this.#list[at + 1] = value;
  }

  append(name: string, value: string): void {
    const key = name.toLowerCase();
    const at = this.#at(key);
    if (at < 0) this.#list.push(key, value);
    else this.#list[at + 1] = `${this.#list[at + 1]}, ${value}`;
  }

  delete(name: string): void {
    const at = this.#at(name.toLowerCase());
    if (at >= 0) this.#list.splice(at, 2);
  }

  forEach(callback: (value: string, name: string) => void): void {
    const list = this.#list;
    for (let i = 0; i < list.length; i += 2) callback(list[i + 1] as string, list[i] as string);
  }

  /** A copy of the flat list, for `writeHead`. */
  lines(): string[] {
    return this.#list.slice();
  }
}

/** The statuses that never carry content (RFC 9110 §6.4.1); undici refuses a body on them. */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

export class BufferedResponse {
  readonly status: number;
  /** No content: a null body, or a status that carries none. */
  readonly empty: boolean;
  /** The bytes; `undefined` while a text given has not been encoded. */
  #bytes: Uint8Array | null | undefined;
  readonly #text: string | undefined;
  #size: number | undefined;
  #fields: FieldMap | undefined;
  #headers: Headers | undefined;
  #real: Response | undefined;

  /** `content`: bytes, or a text that is encoded (UTF-8) only if its bytes are reached for. */
  constructor(
    content: Uint8Array | string | null,
    init: { readonly status?: number; readonly headers?: HeadersInit } = {},
  ) {
    this.status = init.status ?? 200;
    this.empty = content === null || NULL_BODY.has(this.status);
    if (this.empty) this.#bytes = null;
    else if (typeof content === 'string') this.#text = content;
    else this.#bytes = content;
    this.#fields = new FieldMap(init.headers);
  }

  /** The bytes (`null`: no content), a text encoded on first use. */
  get content(): Uint8Array | null {
    if (this.#bytes === undefined) this.#bytes = Buffer.from(this.#text as string, 'utf8');
    return this.#bytes;
  }

  /** The length of the content in bytes, a text's counted without encoding it. */
  get size(): number {
    this.#size ??=
      this.#bytes === undefined ? Buffer.byteLength(this.#text as string, 'utf8') : (this.#bytes?.byteLength ?? 0);
    return this.#size;
  }

  /**
   * The text given, while nothing has reached for its bytes (a tag, a coding, a stored answer): node writes it
   * with the head as one string in one write, where bytes go as a second part of a gathered write.
   */
  get unencoded(): string | undefined {
    return this.#bytes === undefined ? this.#text : undefined;
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

delegateToReal(BufferedResponse, Response, ['status']);

/** A response of `content` (bytes or a text in memory) that is a `Response` to everyone and costs no stream. */
export function bufferedResponse(
  content: Uint8Array | string | null,
  init?: { readonly status?: number; readonly headers?: HeadersInit | Fields },
): Response {
  return new BufferedResponse(content, init as { status?: number; headers?: HeadersInit }) as unknown as Response;
}

/** The bytes of a `bufferedResponse()` (`null`: no content), or `undefined` for a streamed body. */
export function contentOf(response: Response): Uint8Array | null | undefined {
  return heldOf(response)?.content;
}

/** `response` as the `bufferedResponse()` it is, to ask what it holds without encoding a text; else `undefined`. */
export function heldOf(response: Response): BufferedResponse | undefined {
  return (response as unknown) instanceof BufferedResponse ? (response as unknown as BufferedResponse) : undefined;
}

/** The fields of `response` as node's flat list (name, value, …), a copy to add to: `writeHead` takes it as it is. */
export function fieldLines(response: Response): string[] {
  const buffered =
    (response as unknown) instanceof BufferedResponse ? (response as unknown as BufferedResponse) : undefined;
  const fields = buffered === undefined ? response.headers : buffered.fields();
  if (fields instanceof FieldMap) return fields.lines();
  const lines: string[] = [];
  fields.forEach((value, name) => {
    lines.push(name, value);
  });
  return lines;
}

/** The header fields of `response`, to read and change: its `Headers`, or a buffered response's cheaper map. */
export function fieldsOf(response: Response): Fields {
  return (response as unknown) instanceof BufferedResponse
    ? (response as unknown as BufferedResponse).fields()
    : response.headers;
}
