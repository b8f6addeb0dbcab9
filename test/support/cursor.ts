/**
 * What a cursor holds, opened under `key` as the service opens it (src/http/cursor.ts), written apart from it so
 * that the tests check the format rather than repeat the code: AES-256-GCM under a key derived from `key`, the
 * 12-byte IV first, the 16-byte tag last, `orders-cursor.v3` as additional data.
 */
import { createDecipheriv, createHmac } from 'node:crypto';

export function cursorPayload(cursor: string, key: Uint8Array): Record<string, unknown> {
  const bytes = Buffer.from(cursor, 'base64url');
  const decipher = createDecipheriv(
    'aes-256-gcm',
    createHmac('sha256', key).update('orders-cursor-seal').digest(),
    bytes.subarray(0, 12),
  );
  decipher.setAAD(Buffer.from('orders-cursor.v3')).setAuthTag(bytes.subarray(bytes.length - 16));
  const text = Buffer.concat([decipher.update(bytes.subarray(12, bytes.length - 16)), decipher.final()]);
  return JSON.parse(text.toString('utf8')) as Record<string, unknown>;
}
