/**
 * The client's address behind reverse proxies (contract §16, `TRUST_PROXY`). A forwarded address is believed only
 * when the peer is a trusted proxy, and only from the one field that proxy is configured to write
 * (`TRUST_PROXY_HEADER`): the other is the client's own writing, which a proxy may pass on untouched. Each proxy
 * appends the address it received the request from, so the list is read from the right, past the trusted proxies,
 * to the first address that is not one; anything left of it could be anyone's writing and is never used. A hop that
 * says no address (`for=unknown`, `for=_hidden`, no `for`, malformed) ends the walk at the last trusted proxy.
 */
import { BlockList, isIP, isIPv4 } from 'node:net';

/** One entry of `TRUST_PROXY`: an address or a CIDR range, as subnets of a `BlockList`. */
export interface ProxyRange {
  readonly network: string;
  readonly prefix: number;
  readonly family: 'ipv4' | 'ipv6';
}

/** `loopback` in `TRUST_PROXY`: 127.0.0.0/8 and ::1. */
export const LOOPBACK: readonly ProxyRange[] = [
  { network: '127.0.0.0', prefix: 8, family: 'ipv4' },
  { network: '::1', prefix: 128, family: 'ipv6' },
];

const PREFIX = /^(?:0|[1-9][0-9]{0,2})$/;

/** The ranges one `TRUST_PROXY` entry names (`10.0.0.0/8`, `2001:db8::/32`, `::1`, `loopback`); `undefined` if none. */
export function parseProxyEntry(entry: string): ProxyRange[] | undefined {
  if (entry === 'loopback') return [...LOOPBACK];
  const slash = entry.indexOf('/');
  const network = slash === -1 ? entry : entry.slice(0, slash);
  const version = isIP(network);
  if (version === 0 || network.includes('%')) return undefined;
  const max = version === 4 ? 32 : 128;
  const prefixText = slash === -1 ? String(max) : entry.slice(slash + 1);
  if (!PREFIX.test(prefixText) || Number(prefixText) > max) return undefined;
  return [{ network, prefix: Number(prefixText), family: version === 4 ? 'ipv4' : 'ipv6' }];
}

/** A test of whether an address is a trusted proxy; an IPv4-mapped IPv6 address matches the IPv4 ranges. */
export function trustedProxies(ranges: readonly ProxyRange[]): (address: string) => boolean {
  const list = new BlockList();
  for (const range of ranges) list.addSubnet(range.network, range.prefix, range.family);
  return (address) => {
    const version = isIP(address);
    return version !== 0 && list.check(address, version === 4 ? 'ipv4' : 'ipv6');
  };
}

/** The field a trusted proxy writes the client's address in (`TRUST_PROXY_HEADER`), lower case. */
export type ProxyHeader = 'x-forwarded-for' | 'forwarded';
export const PROXY_HEADERS: readonly ProxyHeader[] = ['x-forwarded-for', 'forwarded'];

/**
 * The client's address for a connection from `peer`, given `field`, the value of the `header` field as
 * `Headers.get` gives it. A peer that `trusted` rejects is the client, whatever the field says.
 *
 * ```ts
 * const trusted = trustedProxies(parseProxyEntry('10.0.0.1') ?? []);
 * clientAddress('10.0.0.1', '203.0.113.5, 192.0.2.60', trusted, 'x-forwarded-for'); // '192.0.2.60'
 * clientAddress('198.51.100.9', '192.0.2.60', trusted, 'x-forwarded-for');          // '198.51.100.9'
 * clientAddress('10.0.0.1', 'for=192.0.2.60;proto=https', trusted, 'forwarded');     // '192.0.2.60'
 * ```
 */
export function clientAddress(
  peer: string,
  field: string | null,
  trusted: (address: string) => boolean,
  header: ProxyHeader = 'x-forwarded-for',
): string {
  const self = unmapped(peer);
  if (!trusted(self) || field === null) return self;
  return rightmostUntrusted(header === 'forwarded' ? forwardedFor(field) : field.split(','), self, trusted);
}

/** The first untrusted address from the right of `hops`; a hop naming none stops the walk at the nearest trusted. */
function rightmostUntrusted(
  hops: readonly (string | undefined)[],
  last: string,
  trusted: (address: string) => boolean,
): string {
  let nearest = last;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]?.trim();
    // RFC 9110 §5.6.1: empty list elements are ignored.
    if (hop === '') continue;
    const address = hop === undefined ? undefined : nodeAddress(hop);
    if (address === undefined) return nearest;
    if (!trusted(address)) return address;
    nearest = address;
  }
  return nearest;
}

/**
 * The address of a node identifier (RFC 7239 §6), also as X-Forwarded-For writes it (`192.0.2.43:47011`,
 * `[2001:db8::17]:4711`, a bare `2001:db8::17`); `undefined` for `unknown`, `_hidden` or anything malformed.
 */
export function nodeAddress(node: string): string | undefined {
  let host = node;
  if (node.startsWith('[')) {
    const end = node.indexOf(']');
    if (end === -1) return undefined;
    const rest = node.slice(end + 1);
    if (rest !== '' && !isPort(rest)) return undefined;
    host = node.slice(1, end);
    return isIP(host) === 6 ? unmapped(host) : undefined;
  }
  if (isIP(host) !== 0) return unmapped(host);
  // IPv4 with a port: the only other form with one colon.
  const colon = node.indexOf(':');
  if (colon === -1 || node.indexOf(':', colon + 1) !== -1) return undefined;
  host = node.slice(0, colon);
  return isIPv4(host) && isPort(node.slice(colon)) ? host : undefined;
}

const PORT = /^:(?:[0-9]{1,5}|_[A-Za-z0-9._-]+)$/;

/** `:4711`, or an obfuscated port (`:_abc`, RFC 7239 §6.3). */
function isPort(text: string): boolean {
  return PORT.test(text);
}

/** `::ffff:192.0.2.1` → `192.0.2.1` (RFC 4291 §2.5.5.2); any other address as it is. */
function unmapped(address: string): string {
  if (address.length > 7 && address.slice(0, 7).toLowerCase() === '::ffff:') {
    const v4 = address.slice(7);
    if (isIPv4(v4)) return v4;
  }
  return address;
}

/**
 * The `for` value of each element of a `Forwarded` field, left to right, unquoted (RFC 7239 §4); `undefined` for
 * an element with no `for` or one that cannot be parsed.
 */
export function forwardedFor(field: string): (string | undefined)[] {
  const hops: (string | undefined)[] = [];
  let i = 0;
  const n = field.length;
  while (i <= n) {
    let value: string | undefined;
    let broken = false;
    let pairs = 0;
    // One element: pairs up to a comma outside quotes.
    for (;;) {
      while (i < n && (field[i] === ' ' || field[i] === '\t' || field[i] === ';')) i++;
      if (i >= n || field[i] === ',') break;
      const eq = field.indexOf('=', i);
      const name = eq === -1 ? '' : field.slice(i, eq).trim().toLowerCase();
      if (eq === -1 || name === '' || /[,;"]/.test(name)) {
        broken = true;
        i = skipTo(field, i);
        break;
      }
      i = eq + 1;
      let pairValue: string;
      if (field[i] === '"') {
        // quoted-string (RFC 9110 §5.6.4), with backslash escapes.
        let text = '';
        i++;
        while (i < n && field[i] !== '"') {
          if (field[i] === '\\' && i + 1 < n) i++;
          text += field[i];
          i++;
        }
        if (i >= n) {
          broken = true;
          break;
        }
        i++;
        pairValue = text;
      } else {
        const start = i;
        while (i < n && field[i] !== ';' && field[i] !== ',') i++;
        pairValue = field.slice(start, i).trim();
      }
      pairs += 1;
      // RFC 7239 §4: a parameter occurs at most once per element; a second one makes the element unusable.
      if (name === 'for') {
        if (value !== undefined) broken = true;
        value = pairValue;
      }
      while (i < n && (field[i] === ' ' || field[i] === '\t')) i++;
      if (i < n && field[i] !== ';' && field[i] !== ',') {
        broken = true;
        i = skipTo(field, i);
        break;
      }
    }
    // RFC 9110 §5.6.1: an empty element is ignored, not a hop.
    if (broken || pairs > 0) hops.push(broken ? undefined : value);
    if (i >= n) break;
    i++; // the comma
  }
  return hops;
}

/** The index of the next comma at or after `i` (quotes not honoured: the element is broken anyway), or the end. */
function skipTo(field: string, i: number): number {
  const comma = field.indexOf(',', i);
  return comma === -1 ? field.length : comma;
}
