/** JSON responses, with their exact byte length so HEAD can carry it too. */

export const JSON_CONTENT_TYPE = 'application/json';

/** A JSON response of `body`; `headers` are added as given. */
export function jsonResponse(body: unknown, status = 200, headers: Readonly<Record<string, string>> = {}): Response {
  const bytes = Buffer.from(JSON.stringify(body), 'utf8');
  return new Response(bytes, {
    status,
    headers: { 'content-type': JSON_CONTENT_TYPE, 'content-length': String(bytes.byteLength), ...headers },
  });
}
