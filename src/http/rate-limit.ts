/**
 * Rate limits (contract §10): a fixed window of `limit` requests per `windowSeconds` per key (a user, or a client's
 * address group), in a table of at most `maxKeys` windows that never drops one still running. A new key that finds
 * the table full of running windows counts in one shared overflow window, so a flood of new clients shares one
 * budget and never gives a limited client a fresh one. Fields per draft-ietf-httpapi-ratelimit-headers. With
 * `REDIS_URL`, src/limits/ counts in windows shared through Redis and falls back to these (contract §17).
 */
import { isIPv4, isIPv6 } from 'node:net';
/** A budget: `limit` requests per window of `windowSeconds` (RATE_LIMIT). */
export interface RateLimit {
  readonly limit: number;
  readonly windowSeconds: number;
}

export interface RateDecision {
  readonly allowed: boolean;
  /** Requests left in this window, after this one. */
  readonly remaining: number;
  /** Seconds until the window resets (at least 1). */
  readonly resetSeconds: number;
}

export interface RateLimiter {
  consume(key: string): RateDecision;
  /** The number of keys held now, the overflow window aside (for tests and metrics). */
  readonly size: number;
  /** The `RateLimit-Policy` field value. */
  readonly policy: string;
}

export const POLICY_NAME = 'default';
export const DEFAULT_MAX_KEYS = 10_000;

interface Window {
  start: number;
  count: number;
}

/** A limiter of `config.limit` requests per window per key (`now`: a monotonic clock in milliseconds). */
export function createRateLimiter(
  config: RateLimit,
  now: () => number = () => performance.now(),
  maxKeys = DEFAULT_MAX_KEYS,
): RateLimiter {
  if (!Number.isSafeInteger(maxKeys) || maxKeys < 1)
    throw new RangeError(`maxKeys must be a positive integer, got ${maxKeys}`);
  const windowMs = config.windowSeconds * 1000;
  // A Map iterates in insertion order and a key is re-inserted when its window restarts, so the first key's window
  // began earliest: if it still runs, so does every other.
  const windows = new Map<string, Window>();
  // Every key that found no room while the table was full of running windows.
  let overflow: Window = { start: -Infinity, count: 0 };
  const ended = (window: Window, at: number) => at - window.start >= windowMs;

  const windowOf = (key: string, at: number): Window => {
    const held = windows.get(key);
    if (held !== undefined && !ended(held, at)) return held;
    windows.delete(key);
    for (const [first, window] of windows) {
      if (windows.size < maxKeys || !ended(window, at)) break;
      windows.delete(first);
    }
    if (windows.size < maxKeys) {
      const window = { start: at, count: 0 };
      windows.set(key, window);
      return window;
    }
    if (ended(overflow, at)) overflow = { start: at, count: 0 };
    return overflow;
  };

  return {
    get size() {
      return windows.size;
    },
    policy: `"${POLICY_NAME}";q=${config.limit};w=${config.windowSeconds}`,
    consume(key) {
      const at = now();
      const window = windowOf(key, at);
      window.count += 1;
      // Elapsed time first: (start + windowMs) - at is inexact in floating point; a fresh 60 s window could say 61.
      return decide(config.limit, window.count, windowMs - (at - window.start));
    },
  };
}

/** The decision for a window's `count`-th request, `msLeft` before it ends: local or shared through Redis alike. */
export function decide(limit: number, count: number, msLeft: number): RateDecision {
  return {
    allowed: count <= limit,
    remaining: Math.max(0, limit - count),
    resetSeconds: Math.max(1, Math.ceil(msLeft / 1000)),
  };
}

/** The `RateLimit` field value for a decision. */
export function rateLimitField(decision: RateDecision): string {
  return `"${POLICY_NAME}";r=${decision.remaining};t=${decision.resetSeconds}`;
}

/**
 * Who an unauthenticated request is counted as: an IPv4 address, or an IPv6 address's /64 (what one
 * host or subscriber is given, RFC 7421: single addresses would make one client 2^64 clients); an IPv4-mapped
 * address (RFC 4291 §2.5.5.2) as its IPv4 address. Anything else as given.
 */
export function addressGroup(address: string): string {
  if (isIPv4(address)) return address;
  const hextets = ipv6Hextets(address);
  if (hextets === undefined) return address;
  const [a, b, c, d, e, f, g, h] = hextets as [number, number, number, number, number, number, number, number];
  if (a === 0 && b === 0 && c === 0 && d === 0 && e === 0 && f === 0xffff)
    return `${g >> 8}.${g & 0xff}.${h >> 8}.${h & 0xff}`;
  return `${a.toString(16)}:${b.toString(16)}:${c.toString(16)}:${d.toString(16)}::/64`;
}

/** The eight 16-bit groups of an IPv6 address (its zone ignored), or `undefined` when it is not one. */
export function ipv6Hextets(address: string): number[] | undefined {
  const zone = address.indexOf('%');
  const bare = zone === -1 ? address : address.slice(0, zone);
  if (!isIPv6(bare)) return undefined;
  const groups = (part: string | undefined): number[] =>
    part === undefined || part === ''
      ? []
      : part.split(':').flatMap((group) => {
          if (!group.includes('.')) return [parseInt(group, 16)];
          // A trailing dotted IPv4 address (RFC 4291 §2.2, form 3) is two groups.
          const [p, q, r, s] = group.split('.').map(Number) as [number, number, number, number];
          return [(p << 8) | q, (r << 8) | s];
        });
  const [head, tail] = bare.split('::');
  const left = groups(head);
  const right = groups(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}
