/**
 * Webhook targets (contract §15): http(s) only, and never a private, loopback,
 * link-local or otherwise internal address unless WEBHOOK_ALLOW_PRIVATE=1.
 * Checked when an endpoint is created, and again inside the connection of
 * every delivery (the address checked is the address connected to, so a DNS
 * answer that changes between check and use cannot slip past).
 */
import { lookup } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import { BlockList, isIP } from 'node:net';

const PRIVATE_V4 = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  PRIVATE_V4.addSubnet(network, prefix, 'ipv4');

// IPv6 ranges that are internal, or that embed or tunnel to an IPv4 address
// (IPv4-compatible and -translated, NAT64, 6to4, Teredo): all refused.
const PRIVATE_V6 = new BlockList();
for (const [network, prefix] of [
  ['::', 96],
  ['::ffff:0:0', 96],
  ['::ffff:0:0:0', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 32],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  PRIVATE_V6.addSubnet(network, prefix, 'ipv6');

/** True for an address a webhook must not reach from here. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return PRIVATE_V4.check(address, 'ipv4');
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    return mapped ? PRIVATE_V4.check(mapped[1] as string, 'ipv4') : PRIVATE_V6.check(address, 'ipv6');
  }
  return true;
}

/** The target in normal form (`new URL().href`), or why it is refused. */
export type TargetCheck =
  | { readonly ok: true; readonly href: string }
  | { readonly ok: false; readonly problem: string };

/** Checks `url` as an endpoint target: scheme, credentials, and (unless allowed) where its host resolves. */
export async function checkTarget(url: string, allowPrivate: boolean): Promise<TargetCheck> {
  let parsed: URL;
  try {
    parsed = new URL(url.trim());
  } catch {
    return { ok: false, problem: 'must be an absolute http or https URL' };
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    return { ok: false, problem: 'must be an http or https URL' };
  if (parsed.username !== '' || parsed.password !== '') return { ok: false, problem: 'must not carry credentials' };
  if (parsed.href.length > 2048) return { ok: false, problem: 'must be at most 2048 characters' };
  if (!allowPrivate) {
    const host = parsed.hostname.replace(/^\[|\]$/g, '');
    let addresses: string[];
    try {
      addresses = isIP(host) !== 0 ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
    } catch {
      return { ok: false, problem: `names a host that cannot be resolved (${host})` };
    }
    if (addresses.length === 0 || addresses.some(isPrivateAddress))
      return { ok: false, problem: 'must not point at a private, loopback or link-local address' };
  }
  return { ok: true, href: parsed.href };
}

/**
 * A `lookup` for `http.request` that refuses private addresses: the check and
 * the connection use the same answer.
 */
export function publicOnlyLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    lookup(hostname, {
      all: true,
      ...(typeof options === 'object' && options.family ? { family: options.family } : {}),
    }).then(
      (addresses) => {
        const usable = allowPrivate ? addresses : addresses.filter((a) => !isPrivateAddress(a.address));
        const chosen = usable[0];
        if (chosen === undefined) {
          const error = Object.assign(
            new Error(`${hostname} resolves only to private, loopback or link-local addresses`),
            { code: 'EREFUSEDTARGET' },
          );
          callback(error, '', 0);
          return;
        }
        if (typeof options === 'object' && options.all)
          (callback as unknown as (e: null, a: typeof usable) => void)(null, usable.slice(0, 1));
        else callback(null, chosen.address, chosen.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };
}
