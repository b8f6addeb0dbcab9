/**
 * One request counted in a window shared through Redis, in one round trip: a Lua script, which Redis runs
 * atomically, so that no two processes see the same count. The window behaves as this process's own
 * (src/http/rate-limit.ts), timed by the key's expiry on Redis's clock; Redis deletes the key when it ends, so
 * memory holds only the windows still running.
 */
import { hash } from 'node:crypto';

/**
 * KEYS[1]: the window's key; ARGV[1]: its length in ms. The expiry is set whenever the key has none: on the first
 * count, and on a key some other hand left without one, which would otherwise never end.
 */
export const WINDOW_SCRIPT = `local count = redis.call('INCR', KEYS[1])
local left = redis.call('PTTL', KEYS[1])
if left < 0 then
  left = tonumber(ARGV[1])
  redis.call('PEXPIRE', KEYS[1], left)
end
return {count, left}
`;

/** The name Redis knows the script by (EVALSHA). */
export const WINDOW_SCRIPT_SHA1 = hash('sha1', WINDOW_SCRIPT);

/** What the script needs of a Redis connection: one command, its reply. */
export interface CommandSender {
  sendCommand(args: string[]): Promise<unknown>;
}

/** A window's count, this request included, and the milliseconds it has left. */
export interface WindowCount {
  readonly count: number;
  readonly msLeft: number;
}

/** Counts one request in the window of `key`: EVALSHA, or on NOSCRIPT (a restarted or flushed server) EVAL. */
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
