/**
 * Turns an `Authorization` header into a principal (contract §6). Validated tokens are cached for at most
 * `CACHE_TTL_MS`, so a revoked token stops working within that time even in another process (the contract allows 5 s).
 * Reads never write (no "last used" time). Requests with one uncached token share one lookup, not one each, which
 * would fill the queue for a connection when a busy token's entry expires.
 */
import type { Database } from '../db/database.ts';
import type { RequestScope } from '../db/cancellation.ts';
import { HttpError } from '../http/problem.ts';
import { parseAuthorization, tokenHashText, tokenKind, type Scope } from './tokens.ts';

export type Role = 'customer' | 'admin';

export interface Principal {
  readonly userId: number;
  readonly role: Role;
  readonly tokenId: number;
  readonly scopes: ReadonlySet<Scope>;
}

export interface Authenticator {
  /**
   * The principal for `authorization`, or a 401; a lookup runs in `scope`, cancelled with the request's other
   * statements. `beforeGuess` is called (and may throw) before a lookup of an untagged token not validated lately.
   */
  authenticate(authorization: string | null, scope?: RequestScope, beforeGuess?: () => void): Promise<Principal>;
  /** The principal of a token validated lately (what `authenticate` would give at once), else `undefined`. */
  known?(authorization: string | null): Principal | undefined;
}

export const CACHE_TTL_MS = 2_000;
const CACHE_MAX_ENTRIES = 10_000;
/**
 * contract §10: a token made before tags that was validated within this long is vouched for (no `beforeGuess`):
 * it is still looked up (revocation holds), but never refused because others failed from its address.
 */
export const VOUCHED_MS = 10 * 60_000;
export const REALM = 'orders';

interface Cached {
  readonly principal: Principal;
  readonly until: number;
}

/** A lookup under way, and the request it runs for (it is cancelled with that request's other statements). */
interface Lookup {
  readonly principal: Promise<Principal>;
  readonly scope: RequestScope | undefined;
}

export function createAuthenticator(db: Database, tokenKey: Uint8Array, now: () => number = Date.now): Authenticator {
  const cache = new Map<string, Cached>();
  const underWay = new Map<string, Lookup>();
  /** Untagged tokens validated lately, until when (bounded as the cache is). */
  const vouched = new Map<string, number>();

  async function lookUp(key: string, scope: RequestScope | undefined): Promise<Principal> {
    const at = now();
    const hash = Buffer.from(key, 'base64');
    const row = await (scope === undefined ? db : db.handle(scope)).opt('FindActiveToken', [hash]);
    if (row === undefined) throw unauthorized(true);
    const principal: Principal = {
      userId: row.user_id,
      role: row.role,
      tokenId: row.token_id,
      scopes: new Set(row.scopes),
    };
    // Never cache past the token's own expiry; the time counts from before the lookup, which may have waited.
    const until = Math.min(at + CACHE_TTL_MS, row.expires_at?.getTime() ?? Infinity);
    if (cache.size >= CACHE_MAX_ENTRIES) cache.delete(cache.keys().next().value as string);
    cache.set(key, { principal, until });
    if (vouched.size >= CACHE_MAX_ENTRIES) vouched.delete(vouched.keys().next().value as string);
    vouched.delete(key);
    vouched.set(key, at + VOUCHED_MS);
    return principal;
  }

  function lead(key: string, scope: RequestScope | undefined): Promise<Principal> {
    const lookup: Lookup = { principal: lookUp(key, scope), scope };
    underWay.set(key, lookup);
    const done = () => {
      if (underWay.get(key) === lookup) underWay.delete(key);
    };
    lookup.principal.then(done, done);
    return lookup.principal;
  }

  return {
    known(authorization) {
      const credentials = parseAuthorization(authorization);
      if (credentials.kind !== 'bearer') return undefined;
      const cached = cache.get(tokenHashText(credentials.token));
      return cached !== undefined && cached.until > now() ? cached.principal : undefined;
    },
    async authenticate(authorization, scope, beforeGuess) {
      const credentials = parseAuthorization(authorization);
      if (credentials.kind === 'none') throw unauthorized(false);
      if (credentials.kind === 'malformed') throw unauthorized(true);
      const key = tokenHashText(credentials.token);
      // A token validated lately (only a real one is ever cached): its tag needs no second look.
      const cached = cache.get(key);
      if (cached !== undefined && cached.until > now()) return cached.principal;
      cache.delete(key);
      // What is not a token of ours, or carries a wrong tag, is refused here: no lookup, no cost.
      const kind = tokenKind(credentials.token, tokenKey);
      if (kind === 'forged') throw unauthorized(true);
      if (kind === 'untagged' && (vouched.get(key) ?? 0) <= now()) beforeGuess?.();
      for (;;) {
        const shared = underWay.get(key);
        if (shared === undefined) return lead(key, scope);
        try {
          return await shared.principal;
        } catch (error) {
          // The request that made the lookup gave up and cancelled it: this one, still waiting, shares the next
          // lookup or makes its own.
          if (!shared.scope?.abandoned) throw error;
        }
      }
    },
  };
}

/** 401 with the `WWW-Authenticate` forms of RFC 6750 §3. */
export function unauthorized(tokenWasSent: boolean): HttpError {
  return new HttpError(401, 'unauthorized', {
    detail: tokenWasSent ? 'The bearer token is unknown, expired or revoked.' : 'This resource needs a bearer token.',
    headers: {
      'www-authenticate': tokenWasSent ? `Bearer realm="${REALM}", error="invalid_token"` : `Bearer realm="${REALM}"`,
    },
  });
}

/** 403 for a token that lacks `scope` (RFC 6750 §3.1). */
export function insufficientScope(scope: Scope): HttpError {
  return new HttpError(403, 'forbidden', {
    detail: `This request needs the scope ${scope}.`,
    headers: { 'www-authenticate': `Bearer error="insufficient_scope", scope="${scope}"` },
  });
}
