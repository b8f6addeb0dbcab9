/**
 * JSON responses, serialized once into bytes with their exact length (so HEAD
 * can carry it too), as a `Response` that needs no web stream.
 */
import { bufferedResponse } from './response.ts';

export const JSON_CONTENT_TYPE = 'application/json';

/** A JSON response of `body`; `headers` are added as given. */
export function jsonResponse(body: unknown, status = 200, headers: Readonly<Record<string, string>> = {}): Response {
  const bytes = Buffer.from(JSON.stringify(body), 'utf8');
  return bufferedResponse(bytes, {
    status,
    headers: { 'content-type': JSON_CONTENT_TYPE, 'content-length': String(bytes.byteLength), ...headers },
  });
}
