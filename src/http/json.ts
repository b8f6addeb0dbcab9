/** JSON responses, serialized once into bytes with their exact length (so HEAD can carry it too). */
import { bufferedResponse } from './response.ts';

export const JSON_CONTENT_TYPE = 'application/json';

/** A JSON response of `text`, JSON already serialized (by the database, say); `headers` are added as given. */
export function jsonTextResponse(text: string, status = 200, headers: Readonly<Record<string, string>> = {}): Response {
  const bytes = Buffer.from(text, 'utf8');
  return bufferedResponse(bytes, {
    status,
    headers: { 'content-type': JSON_CONTENT_TYPE, 'content-length': String(bytes.byteLength), ...headers },
  });
}

/** A JSON response of `body`; `headers` are added as given. */
export function jsonResponse(body: unknown, status = 200, headers: Readonly<Record<string, string>> = {}): Response {
  const bytes = Buffer.from(JSON.stringify(body), 'utf8');
  return bufferedResponse(bytes, {
    status,
    headers: { 'content-type': JSON_CONTENT_TYPE, 'content-length': String(bytes.byteLength), ...headers },
  });
}
