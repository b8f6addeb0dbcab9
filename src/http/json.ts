/**
 * JSON responses, serialized once, with their exact length (so HEAD can carry it too). The text stays a text until
 * something needs its bytes (a tag made from them, a coding, a stored answer): most go to the socket as they are.
 */
import { bufferedResponse } from './response.ts';

export const JSON_CONTENT_TYPE = 'application/json';

/** A JSON response of `text`, JSON already serialized (by the database, say); `headers` are added as given. */
export function jsonTextResponse(text: string, status = 200, headers: Readonly<Record<string, string>> = {}): Response {
  return bufferedResponse(text, {
    status,
    headers: {
      'content-type': JSON_CONTENT_TYPE,
      'content-length': String(Buffer.byteLength(text, 'utf8')),
      ...headers,
    },
  });
}

/** A JSON response of `body`; `headers` are added as given. */
export function jsonResponse(body: unknown, status = 200, headers: Readonly<Record<string, string>> = {}): Response {
  return jsonTextResponse(JSON.stringify(body), status, headers);
}
