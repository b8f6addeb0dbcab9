/**
 * The entity tag of an order (contract §9), derived from its revision rather
 * than from its bytes, so that a request can be answered 304 from the
 * revision alone. Pure.
 */
import { JSON_TYPE, VENDOR_TYPES, type Version } from '../http/negotiation.ts';

/**
 * The generation of the order serializer (`orderRepresentation`). The tag
 * stands for bytes the database does not see: when the serializer's output
 * for an unchanged order changes, this changes too, so no cache keeps the
 * old bytes. test/domain/order-etag.test.ts pins the output it stands for.
 */
export const ORDER_FORMAT = 1;

/** Short codes of the media types an order is served in (contract §8). */
const MEDIA_CODES: ReadonlyMap<string, string> = new Map([
  [JSON_TYPE, 'json'],
  [VENDOR_TYPES[1], 'vnd'],
  [VENDOR_TYPES[2], 'vnd'],
]);

/**
 * The strong tag of revision `revision` of order `id` as served in
 * `version` and `mediaType` (the negotiated `Content-Type`): different per
 * version and per media type, the same for every caller. Opaque to clients.
 *
 * @example
 * orderTag(42, 3, 1, 'application/json')               // '"o42r3v1.json.f1"'
 * orderTag(42, 3, 2, 'application/vnd.orders.v2+json') // '"o42r3v2.vnd.f1"'
 */
export function orderTag(id: number, revision: number, version: Version, mediaType: string): string {
  const code = MEDIA_CODES.get(mediaType);
  if (code === undefined) throw new Error(`no entity tag code for the media type ${mediaType}`);
  return `"o${id}r${revision}v${version}.${code}.f${ORDER_FORMAT}"`;
}
