/**
 * Rate limits (SPEC §10): a fixed window of `limit` requests per
 * `windowSeconds` per key (a user, or a client address). The counter table
 * holds at most `maxKeys` entries; when full, the oldest key (by the time its
 * window started) is dropped, so memory stays bounded whatever the traffic.
 * The header fields follow draft-ietf-httpapi-ratelimit-headers.
 */
import type { RateLimit } from '../config.ts';

export interface RateDecision {
  readonly allowed: boolean;
  /** Requests left in this window, after this one. */
  readonly remaining: number;
  /** Seconds until the window resets (at least 1). */
  readonly resetSeconds: number;
}

export interface RateLimiter {
  consume(key: string): RateDecision;
  /** The number of keys held now (for tests and metrics). */
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

export function createRateLimiter(config: RateLimit, now: () => number = Date.now, maxKeys = DEFAULT_MAX_KEYS): RateLimiter {
  const windowMs = config.windowSeconds * 1000;
  // A Map iterates in insertion order; a key is re-inserted when its window
  // restarts, so the first key is always the one whose window began earliest.
  const windows = new Map<string, Window>();
  return {
    get size() {
      return windows.size;
    },
    policy: `"${POLICY_NAME}";q=${config.limit};w=${config.windowSeconds}`,
    consume(key) {
      const at = now();
      let window = windows.get(key);
      if (window === undefined || at - window.start >= windowMs) {
        windows.delete(key);
        while (windows.size >= maxKeys) windows.delete(windows.keys().next().value as string);
        window = { start: at, count: 0 };
        windows.set(key, window);
      }
      window.count += 1;
      const resetSeconds = Math.max(1, Math.ceil((window.start + windowMs - at) / 1000));
      return { allowed: window.count <= config.limit, remaining: Math.max(0, config.limit - window.count), resetSeconds };
    },
  };
}

/** The `RateLimit` field value for a decision. */
export function rateLimitField(decision: RateDecision): string {
  return `"${POLICY_NAME}";r=${decision.remaining};t=${decision.resetSeconds}`;
}
