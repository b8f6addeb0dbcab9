/**
 * Where each principal last wrote (contract §17, read-your-writes): the primary's WAL position once the write
 * committed, kept for `REPLICA_MAX_LAG` (and a second): past it, a replica that serves reads at all has replayed it.
 *
 * Without `REDIS_URL`, in this process (start-up then refuses a replica with `WORKERS` above 1); with it, in Redis,
 * so that every process sees every write (one key per principal, `orders:ryw:users:<id>`). When Redis fails the
 * position is unknown and the read goes to the primary: never a stale read of one's own write, at worst a read the
 * replica could have served. The process also keeps its own writes' positions, first asked, so a write whose
 * record Redis missed still routes the writer's reads here.
 */
import { errorFields, type Logger } from '../base/logger.ts';
import { withDeadline } from '../db/errors.ts';
import { lsnKey, parseLsnKey } from './lsn.ts';

/** How long a record or a lookup waits for Redis. */
export const POSITIONS_TIMEOUT_MS = 100;

/** What `lookup()` answers when it cannot know: read from the primary. */
export const UNKNOWN = Symbol('unknown position');

export interface Positions {
  /** Keeps `lsn` as `principal`'s last write, unless a higher one is kept. */
  record(principal: number, lsn: bigint): Promise<void>;
  /** `principal`'s last write, `undefined` when none is recent, `UNKNOWN` when it cannot be known now. */
  lookup(principal: number): Promise<bigint | undefined | typeof UNKNOWN>;
  close(): void;
}

/** The most principals the process keeps. */
const MAX_LOCAL = 100_000;

/** This process's positions, for `ttlMs` each. */
export function localPositions(ttlMs: number, now: () => number = () => performance.now()): Positions {
  const kept = new Map<number, { lsn: bigint; until: number }>();
  return {
    async record(principal, lsn) {
      const held = kept.get(principal);
      kept.delete(principal);
      if (kept.size >= MAX_LOCAL) kept.delete(kept.keys().next().value as number);
      const highest = held !== undefined && held.until > now() && held.lsn > lsn ? held.lsn : lsn;
      kept.set(principal, { lsn: highest, until: now() + ttlMs });
    },
    async lookup(principal) {
      const held = kept.get(principal);
      if (held === undefined) return undefined;
      if (held.until > now()) return held.lsn;
      kept.delete(principal);
      return undefined;
    },
    close() {},
  };
}

/**
 * Keeps the highest position, whatever order two writes record in. KEYS[1]: the principal's key; ARGV[1]: the
 * position (16 hex digits); ARGV[2]: how long to keep it, in ms.
 */
export const RECORD_SCRIPT = `local held = redis.call('GET', KEYS[1])
if (not held) or held < ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
else
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
`;

/** The positions in the Redis of `url`, each for `ttlMs`, under `prefix` (tests give their own). */
export async function redisPositions(options: {
  url: string;
  ttlMs: number;
  log: Logger;
  prefix?: string;
}): Promise<Positions> {
  const { Redis } = await import('ioredis');
  const prefix = options.prefix ?? 'orders:ryw:users:';
  const client = new Redis(options.url, {
    lazyConnect: true,
    // A command while reconnecting fails at once (no offline queue).
    retryStrategy: (times: number) => Math.min(100 * times, 1_000),
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 1_000,
  });
  const local = localPositions(options.ttlMs);
  let failing = false;
  const failed = (error: unknown) => {
    if (failing) return;
    failing = true;
    options.log.warn('read replica: Redis unreachable, reads of recent writers go to the primary', errorFields(error));
  };
  const succeeded = () => {
    if (!failing) return;
    failing = false;
    options.log.info('read replica: Redis reachable again');
  };
  client.on('error', failed);
  client.on('connect', () => client.stream?.unref());
  await client.connect().catch(failed);
  const within = <T>(work: Promise<T>) =>
    withDeadline(work, POSITIONS_TIMEOUT_MS, () => new Error(`Redis gave no answer within ${POSITIONS_TIMEOUT_MS} ms`));
  return {
    async record(principal, lsn) {
      await local.record(principal, lsn);
      try {
        await within(client.eval(RECORD_SCRIPT, 1, `${prefix}${principal}`, lsnKey(lsn), String(options.ttlMs)));
        succeeded();
      } catch (error) {
        failed(error);
      }
    },
    async lookup(principal) {
      const own = await local.lookup(principal);
      try {
        const held = await within(client.get(`${prefix}${principal}`));
        succeeded();
        const shared = parseLsnKey(held);
        return own !== undefined && own !== UNKNOWN && (shared === undefined || own > shared) ? own : shared;
      } catch (error) {
        failed(error);
        return UNKNOWN;
      }
    },
    close() {
      client.disconnect();
    },
  };
}
