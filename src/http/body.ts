/**
 * Reading request bodies within the limits of contract §11: at most
 * `maxBytes`, enforced while reading (a chunked body without
 * `Content-Length` is cut off as soon as it passes the limit), and within a
 * deadline so a client that stalls cannot hold a request open. A client that
 * closes its connection before the whole body arrived is a `ClientAbortError`,
 * never mistaken for a fault of the server or its database.
 */
import { HttpError } from './problem.ts';

const DECIMAL = /^[0-9]+$/;

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

/**
 * Reads the whole of `body`, whose request declared `contentLength` (its `Content-Length`, `null` when
 * absent), or throws 413 / 408 `HttpError`s, or `ClientAbortError`.
 */
export async function readBody(
  body: ReadableStream<Uint8Array>,
  contentLength: string | null,
  maxBytes: number,
  timeoutMs: number,
): Promise<Uint8Array> {
  if (contentLength !== null && DECIMAL.test(contentLength) && Number(contentLength) > maxBytes) {
    throw tooLarge(maxBytes);
  }
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new HttpError(408, 'request-timeout', {
            detail: `The request body was not received within ${timeoutMs / 1000} s.`,
            headers: { connection: 'close' },
          }),
        ),
      timeoutMs,
    );
  });
  try {
    for (;;) {
      // The stream is the client's connection: it fails only when the client goes away.
      const { done, value } = await Promise.race([reader.read().catch(aborted), deadline]);
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) throw tooLarge(maxBytes);
      chunks.push(value);
    }
  } catch (error) {
    await reader.cancel().catch(() => {});
    throw error;
  } finally {
    clearTimeout(timer);
  }
  return concat(chunks, size);
}

function aborted(cause: unknown): never {
  throw new ClientAbortError(cause);
}

function tooLarge(maxBytes: number): HttpError {
  return new HttpError(413, 'payload-too-large', { detail: `The request body must not exceed ${maxBytes} bytes.` });
}

function concat(chunks: readonly Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0] as Uint8Array;
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}
