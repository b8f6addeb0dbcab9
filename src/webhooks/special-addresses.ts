/**
 * Where a webhook may not go (contract §15): every block of the IANA IPv4 and
 * IPv6 Special-Purpose Address Registries (RFC 6890) that the registry does
 * not call globally reachable, as the registries stood when last read
 * (`REGISTRY_DATE`), one row per block; an address is judged by the most
 * specific block that holds it, so a globally reachable block inside one
 * that is not (192.0.0.9/32 in 192.0.0.0/24) is allowed, and a block marked
 * N/A (6to4, Teredo, the deprecated 6to4 relay anycast) is refused. Beyond
 * the registries, what no webhook can mean: IPv6 outside 2000::/3, the only
 * block IANA allocates for global unicast (its IPv6 Address Space registry);
 * IPv4 multicast; the deprecated IPv4-translated range; and the IPv4/IPv6
 * translation prefix, whose translator may hand the request to any IPv4
 * address, private ones included. Pure.
 */
import { isIP } from 'node:net';
import { ipv6Hextets } from '../http/rate-limit.ts';

/** When the rows below were checked against the registries (iana-ipv4-special-registry, iana-ipv6-special-registry). */
export const REGISTRY_DATE = '2025-10-09';

/** [block, name, globally reachable]: `false` for the registry's False and N/A alike. */
type Row = readonly [block: string, name: string, reachable: boolean];

export const IPV4_REGISTRY: readonly Row[] = [
  ['0.0.0.0/8', '"This network" (RFC 791)', false],
  ['0.0.0.0/32', '"This host on this network" (RFC 1122)', false],
  ['10.0.0.0/8', 'Private-Use (RFC 1918)', false],
  ['100.64.0.0/10', 'Shared Address Space (RFC 6598)', false],
  ['127.0.0.0/8', 'Loopback (RFC 1122)', false],
  ['169.254.0.0/16', 'Link Local (RFC 3927)', false],
  ['172.16.0.0/12', 'Private-Use (RFC 1918)', false],
  ['192.0.0.0/24', 'IETF Protocol Assignments (RFC 6890)', false],
  ['192.0.0.0/29', 'IPv4 Service Continuity Prefix (RFC 7335)', false],
  ['192.0.0.8/32', 'IPv4 dummy address (RFC 7600)', false],
  ['192.0.0.9/32', 'Port Control Protocol Anycast (RFC 7723)', true],
  ['192.0.0.10/32', 'Traversal Using Relays around NAT Anycast (RFC 8155)', true],
  ['192.0.0.170/32', 'NAT64/DNS64 Discovery (RFC 8880)', false],
  ['192.0.0.171/32', 'NAT64/DNS64 Discovery (RFC 8880)', false],
  ['192.0.2.0/24', 'Documentation (TEST-NET-1, RFC 5737)', false],
  ['192.31.196.0/24', 'AS112-v4 (RFC 7535)', true],
  ['192.52.193.0/24', 'AMT (RFC 7450)', true],
  ['192.88.99.0/24', 'Deprecated (6to4 Relay Anycast, RFC 7526): N/A', false],
  ['192.88.99.2/32', '6a44-relay anycast address (RFC 6751)', false],
  ['192.168.0.0/16', 'Private-Use (RFC 1918)', false],
  ['192.175.48.0/24', 'Direct Delegation AS112 Service (RFC 7534)', true],
  ['198.18.0.0/15', 'Benchmarking (RFC 2544)', false],
  ['198.51.100.0/24', 'Documentation (TEST-NET-2, RFC 5737)', false],
  ['203.0.113.0/24', 'Documentation (TEST-NET-3, RFC 5737)', false],
  ['240.0.0.0/4', 'Reserved (RFC 1112)', false],
  ['255.255.255.255/32', 'Limited Broadcast (RFC 8190)', false],
];

export const IPV6_REGISTRY: readonly Row[] = [
  ['::1/128', 'Loopback Address (RFC 4291)', false],
  ['::/128', 'Unspecified Address (RFC 4291)', false],
  ['::ffff:0:0/96', 'IPv4-mapped Address (RFC 4291)', false],
  ['64:ff9b::/96', 'IPv4-IPv6 Translat. (RFC 6052)', true],
  ['64:ff9b:1::/48', 'IPv4-IPv6 Translat. (RFC 8215)', false],
  ['100::/64', 'Discard-Only Address Block (RFC 6666)', false],
  ['100:0:0:1::/64', 'Dummy IPv6 Prefix (RFC 9780)', false],
  ['2001::/23', 'IETF Protocol Assignments (RFC 2928)', false],
  ['2001::/32', 'TEREDO (RFC 4380): N/A', false],
  ['2001:1::1/128', 'Port Control Protocol Anycast (RFC 7723)', true],
  ['2001:1::2/128', 'Traversal Using Relays around NAT Anycast (RFC 8155)', true],
  ['2001:1::3/128', 'DNS-SD Service Registration Protocol Anycast (RFC 9665)', true],
  ['2001:2::/48', 'Benchmarking (RFC 5180)', false],
  ['2001:3::/32', 'AMT (RFC 7450)', true],
  ['2001:4:112::/48', 'AS112-v6 (RFC 7535)', true],
  ['2001:10::/28', 'Deprecated (previously ORCHID, RFC 4843)', false],
  ['2001:20::/28', 'ORCHIDv2 (RFC 7343)', true],
  ['2001:30::/28', 'Drone Remote ID Protocol Entity Tags (RFC 9374)', true],
  ['2001:db8::/32', 'Documentation (RFC 3849)', false],
  ['2002::/16', '6to4 (RFC 3056): N/A', false],
  ['2620:4f:8000::/48', 'Direct Delegation AS112 Service (RFC 7534)', true],
  ['3fff::/20', 'Documentation (RFC 9637)', false],
  ['5f00::/16', 'Segment Routing (SRv6) SIDs (RFC 9602)', false],
  ['fc00::/7', 'Unique-Local (RFC 4193)', false],
  ['fe80::/10', 'Link-Local Unicast (RFC 4291)', false],
];

/** Blocks outside the registries that a webhook can never mean, refused whatever holds them. */
export const REFUSED_BEYOND: readonly Row[] = [
  ['224.0.0.0/4', 'Multicast (RFC 5771)', false],
  ['::ffff:0:0:0/96', 'IPv4-translated (RFC 2765)', false],
  ['64:ff9b::/96', 'IPv4-IPv6 translation: the translator may reach any IPv4 address, private ones too', false],
];

/** RFC 4291 §2.4, the IANA IPv6 Address Space registry: global unicast is allocated from 2000::/3 alone. */
const GLOBAL_UNICAST = 0x2000n;

interface Block {
  readonly bits: bigint;
  readonly prefix: number;
  readonly reachable: boolean;
}

const blocks = (family: 4 | 6, rows: readonly Row[]): Block[] =>
  rows
    .filter(([block]) => isIP(block.split('/')[0] as string) === family)
    .map(([block, , reachable]) => {
      const [address, prefix] = block.split('/') as [string, string];
      return { bits: bitsOf(address, family) as bigint, prefix: Number(prefix), reachable };
    });

const V4 = { width: 32, registry: blocks(4, IPV4_REGISTRY), beyond: blocks(4, REFUSED_BEYOND) };
const V6 = { width: 128, registry: blocks(6, IPV6_REGISTRY), beyond: blocks(6, REFUSED_BEYOND) };

/** True for an address a webhook must not reach; anything that is not an IP address is refused too. */
export function isPrivateAddress(address: string): boolean {
  const zone = address.indexOf('%');
  const bare = zone === -1 ? address : address.slice(0, zone);
  const family = isIP(bare);
  if (family !== 4 && family !== 6) return true;
  const table = family === 4 ? V4 : V6;
  const bits = bitsOf(bare, family) as bigint;
  const holds = (block: Block) => {
    const shift = BigInt(table.width - block.prefix);
    return bits >> shift === block.bits >> shift;
  };
  if (family === 6 && bits >> 125n !== GLOBAL_UNICAST >> 13n) return true;
  if (table.beyond.some(holds)) return true;
  let decisive: Block | undefined;
  for (const block of table.registry) if (holds(block) && (decisive?.prefix ?? -1) < block.prefix) decisive = block;
  return decisive !== undefined && !decisive.reachable;
}

/** The address as an unsigned integer of its width (32 or 128 bits). */
function bitsOf(address: string, family: 4 | 6): bigint | undefined {
  if (family === 4) return address.split('.').reduce((bits, part) => (bits << 8n) | BigInt(Number(part)), 0n);
  return ipv6Hextets(address)?.reduce((bits, group) => (bits << 16n) | BigInt(group), 0n);
}
