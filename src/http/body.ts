/**
 * Reading request bodies within the limits of contract §11: the size, checked while reading (a chunked body is
 * cut off as it passes it); a deadline, a first byte soon and a least average rate, so a client that stalls or
 * trickles cannot hold a request open; the process's budget of bytes in flight and the client's share of it; and
 * a cost linear in the bytes however they are cut up (one byte per chunk costs the parser a call per byte).
 */
import type { BodyBudget } from './body-budget.ts';
import { overBudget, overShare, timedOut, tooFragmented, tooLarge, tooSlow } from './body-refusals.ts';
import type { HttpError } from './problem.ts';

const DECIMAL = /^[0-9]+$/;

/** Pieces (node's reads: a TCP read's worth, or a chunk) a body may come in beyond one per `MIN_PIECE_BYTES`. */
export const FREE_PIECES = 256;
/** The smallest average piece, in bytes, of a body that comes in more than `FREE_PIECES` pieces. */
export const MIN_PIECE_BYTES = 256;
/** The first buffer of a body: doubled as it fills, up to its declared length or the limit. */
const FIRST_CAPACITY = 16_384;

/** A body's first byte comes within this, once its reading starts (after `100 Continue`). */
export const FIRST_BYTE_MS = 5_000;
/** After this long, a body must have come at `MIN_BYTES_PER_SECOND` on average since it started. */
export const RATE_GRACE_MS = 5_000;
export const MIN_BYTES_PER_SECOND = 1_024;

/** The client closed its connection before sending the whole body; `cause.code` (`ECONNRESET`) is no database's. */
export class ClientAbortError extends Error {
  override name = 'ClientAbortError';
  constructor(cause: unknown) {
    super('The client closed the connection before sending the whole body.', { cause });
  }
}

/** Where a body comes from: it hands each piece to `onPiece` as it arrives, none kept. */
export interface BodySource {
  /** `done` settles at the body's end (or rejects with `ClientAbortError`); `stop()` drops later pieces unread. */
  pump(onPiece: (piece: Uint8Array) => void): { readonly done: Promise<void>; stop(): void };
}

export interface BodyLimits {
  readonly maxBytes: number;
  /** Time a client gets to send its whole body. */
  readonly timeoutMs: number;
  readonly budget: BodyBudget;
  /** Whose share of the budget the body takes: a principal, or an address group (`BodyBudget.take`). */
  readonly owner: string;
  /** `FIRST_BYTE_MS`, `RATE_GRACE_MS`, `MIN_BYTES_PER_SECOND`, and how often they are checked (1 s). */
  readonly pace?: { firstByteMs: number; graceMs: number; minBytesPerSecond: number; checkMs: number };
}

const PACE = {
  firstByteMs: FIRST_BYTE_MS,
  graceMs: RATE_GRACE_MS,
  minBytesPerSecond: MIN_BYTES_PER_SECOND,
  checkMs: 1_000,
};

/** A body read within its limits, and its share of the budget, to give back when its request is answered. */
export interface ReadBody {
  readonly bytes: Uint8Array;
  release(): void;
}

/** A body's `Content-Length`, or `undefined` (chunked); 413 past the limit before any byte is read. */
export function declaredLength(contentLength: string | null, limits: Pick<BodyLimits, 'maxBytes'>): number | undefined {
  if (contentLength === null || !DECIMAL.test(contentLength)) return undefined;
  const declared = Number(contentLength);
  if (declared > limits.maxBytes) throw tooLarge(limits.maxBytes);
  return declared;
}

/** Reads the whole body into one buffer, or throws 413, 408, 429 or 503 `HttpError`s, or `ClientAbortError`. */
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
  let pacer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timedOut(limits.timeoutMs)), limits.timeoutMs);
    const pace = limits.pace ?? PACE;
    const started = performance.now();
    pacer = setInterval(() => {
      const elapsed = performance.now() - started;
      if (buffer.size === 0 && elapsed >= pace.firstByteMs)
        reject(tooSlow(`no byte came in ${pace.firstByteMs / 1000} s`));
      else if (elapsed >= pace.graceMs && buffer.size < (pace.minBytesPerSecond * elapsed) / 1000)
        reject(tooSlow(`it came at less than ${pace.minBytesPerSecond} bytes a second`));
    }, pace.checkMs);
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
    clearInterval(pacer);
  }
}

/** One body's bytes as they arrive, with its limits. */
class BodyBuffer {
  readonly #limits: BodyLimits;
  #bytes: Uint8Array;
  #size = 0;
  #pieces = 0;
  #held = 0;
  #refusal: HttpError | undefined;
  /** The most its buffer grows to: its declared length, or the limit. */
  readonly #most: number;

  constructor(declared: number | undefined, limits: BodyLimits) {
    this.#limits = limits;
    this.#most = declared ?? limits.maxBytes;
    // A declared length reserves nothing: the buffer, and its share of the budget, start small and grow by doubling.
    const capacity = Math.min(FIRST_CAPACITY, this.#most);
    this.#hold(capacity);
    this.#bytes = new Uint8Array(capacity);
  }

  get size(): number {
    return this.#size;
  }

  /** Adds `piece`; `false` once the body is refused (the reason is thrown by `result()`). */
  push(piece: Uint8Array): boolean {
    if (this.#refusal !== undefined) return false;
    this.#pieces += 1;
    const size = this.#size + piece.byteLength;
    try {
      if (size > this.#limits.maxBytes) throw tooLarge(this.#limits.maxBytes);
      if (this.#pieces > FREE_PIECES + size / MIN_PIECE_BYTES)
        throw tooFragmented(this.#pieces, size, FREE_PIECES, MIN_PIECE_BYTES);
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
    this.#limits.budget.give(this.#held, this.#limits.owner);
    this.#held = 0;
  }

  #grow(size: number): void {
    let capacity = Math.max(this.#bytes.byteLength, 1);
    while (capacity < size) capacity *= 2;
    capacity = Math.max(size, Math.min(capacity, this.#most));
    this.#hold(capacity - this.#bytes.byteLength);
    const bytes = new Uint8Array(capacity);
    bytes.set(this.#bytes.subarray(0, this.#size));
    this.#bytes = bytes;
  }

  #hold(bytes: number): void {
    const refused = this.#limits.budget.take(bytes, this.#limits.owner);
    if (refused === 'budget') throw overBudget(this.#limits.budget);
    if (refused === 'share') throw overShare(this.#limits.budget);
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
