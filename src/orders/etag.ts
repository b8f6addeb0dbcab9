/**
 * The entity tag of an order (contract §9), derived from its revision rather
 * than from its bytes, so that a request can be answered 304 from the
 * revision alone; and from the generation of the order's representation
 * (src/orders/format.ts), which changes by itself when the representation
 * does.
 */
import { JSON_TYPE, VENDOR_TYPES, type Version } from '../http/negotiation.ts';
import { orderFormat } from './format.ts';

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
 * orderTag(42, 3, 1, 'application/json')               // '"o42r3v1.json.f' + orderFormat() + '"'
 * orderTag(42, 3, 2, 'application/vnd.orders.v2+json') // '"o42r3v2.vnd.f' + orderFormat() + '"'
 */
export function orderTag(
  id: number,
  revision: number,
  version: Version,
  mediaType: string,
  format: string = orderFormat(),
): string {
  return `"o${id}r${revision}${orderTagSuffix(version, mediaType, format)}`;
}

/** What follows an order tag's id and revision (`v1.json.f…"`), for the database to write the tag of a new order. */
export function orderTagSuffix(version: Version, mediaType: string, format: string = orderFormat()): string {
  const code = MEDIA_CODES.get(mediaType);
  if (code === undefined) throw new Error(`no entity tag code for the media type ${mediaType}`);
  return `v${version}.${code}.f${format}"`;
}
