/**
 * Webhook targets (contract §15): http(s) only, and never a private, loopback,
 * link-local or otherwise special-purpose address (special-addresses.ts: the
 * IANA registries' blocks that are not globally reachable) unless
 * WEBHOOK_ALLOW_PRIVATE=1.
 * Checked when an endpoint is created, and again inside the connection of
 * every delivery (the address checked is the address connected to, so a DNS
 * answer that changes between check and use cannot slip past).
 */
import { lookup } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import { isIP } from 'node:net';
import { isPrivateAddress } from './special-addresses.ts';

export { isPrivateAddress };

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
      return {
        ok: false,
        problem: PRIVATE_REFUSED,
      };
  }
  return { ok: true, href: parsed.href };
}

/** Why a private target is refused, with the setting that allows it (tests, local development). */
export const PRIVATE_REFUSED =
  'must not point at a private, loopback or link-local address (an operator may allow them with ' +
  'WEBHOOK_ALLOW_PRIVATE=1)';

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
