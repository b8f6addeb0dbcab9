/** The pure rules of idempotency keys (contract §7; draft-ietf-httpapi-idempotency-key-header). */
import { createHash } from 'node:crypto';
import { canonicalJsonText } from './canonical-json.ts';
import { jsonText } from './json-body.ts';
import { MAX_JSON_DEPTH } from './json-scan.ts';

export const MAX_KEY_LENGTH = 255;
// Visible ASCII (%x21-7E), 1–255 of them.
const BARE_KEY = /^[\x21-\x7e]{1,255}$/;
// RFC 8941 §3.3.3 sf-string: printable ASCII with \" and \\ escapes.
const SF_STRING = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/;

export type KeyParse =
  | { readonly ok: true; readonly key: string | undefined }
  | { readonly ok: false; readonly detail: string };

/** An `Idempotency-Key` value: a bare key of 1–255 visible ASCII characters, or a structured-field string of one. */
export function parseIdempotencyKey(value: string | null): KeyParse {
  if (value === null) return { ok: true, key: undefined };
  const quoted = SF_STRING.exec(value);
  // A value that opens a quote must be a whole structured-field string.
  if (quoted === null && value.startsWith('"')) return { ok: false, detail: INVALID };
  const key = quoted ? (quoted[1] as string).replace(/\\(["\\])/g, '$1') : value;
  if (BARE_KEY.test(key)) return { ok: true, key };
  return { ok: false, detail: INVALID };
}

const INVALID = `Idempotency-Key must be 1 to ${MAX_KEY_LENGTH} visible ASCII characters, bare or as a quoted string.`;

/** The request's fingerprint: method, path with its version, and the body in canonical form (canonical-json.ts). */
export function fingerprint(method: string, path: string, body: Uint8Array): string {
  const hash = createHash('sha256').update(`${method} ${path}\n`);
  const canonical = canonicalBody(body);
  // A body that is not JSON, or too big to walk, counts by its bytes.
  return (canonical === undefined ? hash.update('raw:').update(body) : hash.update(canonical)).digest('base64url');
}

function canonicalBody(body: Uint8Array): string | undefined {
  // The walk recurses and sorts: a body too deep or too big for it (both refused later) is not walked (contract §11).
  const read = jsonText(body);
  if (read === null || read.shape.depth > MAX_JSON_DEPTH || read.shape.oversize !== undefined) return undefined;
  try {
    // JSON.parse says whether it is JSON at all; the canonical form is read from the text, numbers as written.
    JSON.parse(read.text);
  } catch (error) {
    if (error instanceof SyntaxError) return undefined;
    throw error;
  }
  return canonicalJsonText(read.text);
}

/** The results of requests that executed are stored (2xx, the rules' 409 and 422); others run anew. */
export function isStored(status: number): boolean {
  return (status >= 200 && status < 300) || status === 409 || status === 422;
}

/** The response fields stored with a result and replayed with it. */
export const STORED_HEADERS = ['content-type', 'location', 'etag'] as const;
