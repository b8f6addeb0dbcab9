/**
 * One request counted in a window shared through Redis (contract §10, §17),
 * in one round trip: a Lua script, which Redis runs atomically, so that no
 * two processes can both see the same count. The window has the semantics of
 * this process's own (src/http/rate-limit.ts): it starts with a key's first
 * request and lasts `windowMs`; Redis deletes the key when it ends, so memory
 * is bounded by the keys of windows still running. Its length is measured on
 * Redis's clock (the key's expiry), not on each machine's.
 */
import { hash } from 'node:crypto';

/**
 * KEYS[1]: the window's key; ARGV[1]: the window's length in milliseconds.
 * Returns the window's count, this request included, and the milliseconds it
 * has left. The expiry is set when the key has none: on the first count (and
 * on a key some other hand left without one, which would otherwise never end).
 */
export const WINDOW_SCRIPT = `local count = redis.call('INCR', KEYS[1])
local left = redis.call('PTTL', KEYS[1])
if left < 0 then
  left = tonumber(ARGV[1])
  redis.call('PEXPIRE', KEYS[1], left)
end
return {count, left}
`;

/** The name Redis knows the script by once loaded (EVALSHA). */
export const WINDOW_SCRIPT_SHA1 = hash('sha1', WINDOW_SCRIPT);

/** What the script needs of a Redis connection: one command, its reply. */
export interface CommandSender {
  sendCommand(args: string[]): Promise<unknown>;
}

/** A window's count and the milliseconds it has left, as the script returns them. */
export interface WindowCount {
  readonly count: number;
  readonly msLeft: number;
}

/**
 * Counts one request in the window of `key`: EVALSHA, and only when Redis does
 * not have the script (a restarted or flushed server: NOSCRIPT), EVAL, which
 * also loads it for the next time.
 *
 * ```ts
 * await countInWindow(client, 'orders:ratelimit:users:7', 60_000); // { count: 1, msLeft: 60000 }
 * ```
 */
export async function countInWindow(redis: CommandSender, key: string, windowMs: number): Promise<WindowCount> {
  const args = ['1', key, String(windowMs)];
  let reply: unknown;
  try {
    reply = await redis.sendCommand(['EVALSHA', WINDOW_SCRIPT_SHA1, ...args]);
  } catch (error) {
    if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error;
    reply = await redis.sendCommand(['EVAL', WINDOW_SCRIPT, ...args]);
  }
  if (!Array.isArray(reply) || typeof reply[0] !== 'number' || typeof reply[1] !== 'number')
    throw new TypeError(`the window script returned ${JSON.stringify(reply)}`);
  return { count: reply[0], msLeft: reply[1] };
}
