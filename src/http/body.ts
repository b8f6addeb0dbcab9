/**
 * Reading request bodies within the limits of contract §11: at most
 * `maxBytes`, enforced while reading (a chunked body without
 * `Content-Length` is cut off as soon as it passes the limit); within a
 * deadline, so a client that stalls cannot hold a request open; within the
 * process's budget of bytes for all bodies in flight (503 past it); and at a
 * cost linear in its bytes however it is cut up: its bytes go into one
 * buffer as they come (of the declared length when there is one), no piece
 * is kept, and a body that comes in too many small pieces for its size is
 * refused (one byte per chunk costs the parser a call per byte). A client
 * that closes its connection before the whole body arrived is a
 * `ClientAbortError`, never mistaken for a fault of the server or its database.
 */
import type { BodyBudget } from './body-budget.ts';
import { HttpError } from './problem.ts';

const DECIMAL = /^[0-9]+$/;

/**
 * Pieces (node's reads of a body: a TCP read's worth, or one chunk of the chunked coding) a body may come in
 * beyond one per `MIN_PIECE_BYTES` of it: a JSON body written in a few dozen small writes passes, a megabyte
 * in one-byte chunks is refused at its 257th.
 */
export const FREE_PIECES = 256;
/** The smallest average piece, in bytes, of a body that comes in more than `FREE_PIECES` pieces. */
export const MIN_PIECE_BYTES = 256;
/** The first buffer of a body of unknown length (chunked): doubled as it fills, up to the limit. */
const FIRST_CAPACITY = 16_384;

/**
 * The body stream failed: the client closed (or reset) its connection before
 * sending the whole body. Its `cause` is the socket's error, whose `code`
 * (`ECONNRESET`) must not be read as a database's.
 */
export class ClientAbortError extends Error {
  override name = 'ClientAbortError';
  constructor(cause: unknown) {
    super('The client closed the connection before sending the whole body.', { cause });
  }
}

/** Where a body comes from: it hands each piece to `onPiece` as it arrives, none kept. */
export interface BodySource {
  /**
   * Starts the flow of pieces; `done` settles at the body's end (or rejects with `ClientAbortError`), and `stop()`
   * ends the flow early: later pieces are dropped unread into no buffer.
   */
  pump(onPiece: (piece: Uint8Array) => void): { readonly done: Promise<void>; stop(): void };
}

export interface BodyLimits {
  readonly maxBytes: number;
  /** Time a client gets to send its whole body. */
  readonly timeoutMs: number;
  readonly budget: BodyBudget;
}

/** A body read within its limits, and its share of the budget, to give back when its request is answered. */
export interface ReadBody {
  readonly bytes: Uint8Array;
  release(): void;
}

/**
 * The share of the budget a body declared `declared` bytes long takes before it is read: 413 past the limit,
 * 503 past the budget. `undefined` for a body of unknown length (chunked), whose share grows as it is read.
 */
export function declaredLength(contentLength: string | null, limits: BodyLimits): number | undefined {
  if (contentLength === null || !DECIMAL.test(contentLength)) return undefined;
  const declared = Number(contentLength);
  if (declared > limits.maxBytes) throw tooLarge(limits.maxBytes);
  return declared;
}

/**
 * Reads the whole body of `source`, which declared `declared` bytes (`declaredLength()`; `undefined`: chunked),
 * into one buffer, or throws 413, 408 or 503 `HttpError`s, or `ClientAbortError`.
 */
export async function readBody(
  source: BodySource,
  declared: number | undefined,
  limits: BodyLimits,
): Promise<ReadBody> {
  const buffer = new BodyBuffer(declared, limits);
  let refused = false;
  const flow = source.pump((piece) => {
    // A refusal stops the flow at once: the rest of what arrives is not read into any buffer.
    if (!refused && !buffer.push(piece)) {
      refused = true;
      queueMicrotask(() => flow.stop());
    }
  });
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timedOut(limits.timeoutMs)), limits.timeoutMs);
  });
  try {
    await Promise.race([flow.done, deadline]);
    return buffer.result();
  } catch (error) {
    flow.stop();
    buffer.release();
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** One body's bytes as they arrive, with its limits. */
class BodyBuffer {
  readonly #limits: BodyLimits;
  #bytes: Uint8Array;
  #size = 0;
  #pieces = 0;
  /** The budget this body holds. */
  #held = 0;
  /** Why the body was refused, once it was. */
  #refusal: HttpError | undefined;

  constructor(declared: number | undefined, limits: BodyLimits) {
    this.#limits = limits;
    const capacity = declared ?? Math.min(FIRST_CAPACITY, limits.maxBytes);
    this.#hold(capacity);
    this.#bytes = new Uint8Array(capacity);
  }

  /** Adds `piece`; `false` once the body is refused (the reason is thrown by `result()`). */
  push(piece: Uint8Array): boolean {
    if (this.#refusal !== undefined) return false;
    this.#pieces += 1;
    const size = this.#size + piece.byteLength;
    try {
      if (size > this.#limits.maxBytes) throw tooLarge(this.#limits.maxBytes);
      if (this.#pieces > FREE_PIECES + size / MIN_PIECE_BYTES) throw tooFragmented(this.#pieces, size);
      // A chunked body grows its buffer, and its budget, by doubling (node's parser passes no declared length).
      if (size > this.#bytes.byteLength) this.#grow(size);
    } catch (error) {
      this.#refusal = error as HttpError;
      return false;
    }
    this.#bytes.set(piece, this.#size);
    this.#size = size;
    return true;
  }

  result(): ReadBody {
    if (this.#refusal !== undefined) {
      this.release();
      throw this.#refusal;
    }
    const bytes = this.#size === this.#bytes.byteLength ? this.#bytes : this.#bytes.subarray(0, this.#size);
    return { bytes, release: () => this.release() };
  }

  release(): void {
    this.#limits.budget.give(this.#held);
    this.#held = 0;
  }

  #grow(size: number): void {
    let capacity = Math.max(this.#bytes.byteLength, 1);
    while (capacity < size) capacity *= 2;
    capacity = Math.min(capacity, this.#limits.maxBytes);
    this.#hold(capacity - this.#bytes.byteLength);
    const bytes = new Uint8Array(capacity);
    bytes.set(this.#bytes.subarray(0, this.#size));
    this.#bytes = bytes;
  }

  #hold(bytes: number): void {
    if (!this.#limits.budget.take(bytes)) throw overBudget(this.#limits.budget);
    this.#held += bytes;
  }
}

/** A web-standard body stream as a `BodySource` (a `Request` that did not come through the node bridge). */
export function streamSource(body: ReadableStream<Uint8Array>): BodySource {
  return {
    pump(onPiece) {
      const reader = body.getReader();
      let stopped = false;
      const done = (async () => {
        for (;;) {
          const { done: end, value } = await reader.read().catch(aborted);
          if (end || stopped) return;
          onPiece(value);
        }
      })();
      return {
        done,
        stop() {
          stopped = true;
          reader.cancel().catch(() => {});
        },
      };
    },
  };
}

function aborted(cause: unknown): never {
  throw new ClientAbortError(cause);
}

/** 408, and the connection closed: what is left of the body is not read. */
function timedOut(ms: number): HttpError {
  return new HttpError(408, 'request-timeout', {
    detail: `The request body was not received within ${ms / 1000} s.`,
    headers: { connection: 'close' },
  });
}

function tooLarge(maxBytes: number): HttpError {
  return new HttpError(413, 'payload-too-large', { detail: `The request body must not exceed ${maxBytes} bytes.` });
}

function tooFragmented(pieces: number, size: number): HttpError {
  return new HttpError(413, 'payload-too-large', {
    detail:
      `The request body came in ${pieces} pieces for ${size} bytes; at most ${FREE_PIECES} pieces and one more ` +
      `per ${MIN_PIECE_BYTES} bytes are read. Send it in fewer, larger writes or chunks.`,
    headers: { connection: 'close' },
  });
}

/** 503 with `Retry-After`: the bodies in flight hold the whole budget; a keyed retry is safe. */
function overBudget(budget: BodyBudget): HttpError {
  return new HttpError(503, 'unavailable', {
    detail:
      `The service is reading as many request bodies as it holds at once (${budget.limit} bytes in all); ` +
      'nothing was done. Try again shortly.',
    headers: { 'retry-after': '1', connection: 'close' },
  });
}
