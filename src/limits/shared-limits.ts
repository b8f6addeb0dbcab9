/**
 * Rate limits shared by every process through Redis (`REDIS_URL`, contract §10, §17): one window per user or client
 * address across every process and machine.
 *
 * Redis never fails a request or makes it wait long: an error or a time-out puts the process on its own windows at
 * once, for that request and every following one, and drops the connection with whatever was queued on it. While
 * Redis is out of use no request waits for it: a new connection is probed in the background. Redis unreachable at
 * start is the same outage: start-up never fails for it. `ioredis` is loaded only when a limiter is opened.
 */
import { errorFields, type Logger } from '../base/logger.ts';
import { withDeadline } from '../db/errors.ts';
import { decide, type RateDecision, type RateLimit, type RateLimiter } from '../http/rate-limit.ts';
import { countInWindow, type CommandSender } from './window-script.ts';

/** How long a request waits for Redis at most; then it is counted in this process (docs/operations.md). */
export const REDIS_TIMEOUT_MS = 100;
/** How long opening a connection may take (TCP, TLS, AUTH, SELECT): never in a request. */
export const REDIS_CONNECT_TIMEOUT_MS = 1_000;
/** How long after a failure the next probe starts. */
export const REDIS_PROBE_INTERVAL_MS = 1_000;
/** Every key starts with this, then the table and the key: `orders:ratelimit:users:<user id>`. */
export const REDIS_KEY_PREFIX = 'orders:ratelimit:';

/** The `warn` line of an outage, logged once as it begins. */
export const REDIS_UNREACHABLE = 'rate limits: Redis unreachable, counting in this process';
/** The `info` line of a start that found Redis. */
export const REDIS_IN_USE = 'rate limits: counting in Redis';
/** The `info` line of an outage's end. */
export const REDIS_BACK = 'rate limits: Redis reachable again, counting in Redis';

/** Contract §10's tables: users by id; requests without a valid token, and failed authentications, by address. */
export type LimitTable = 'users' | 'addresses' | 'failures';

/** What GET /metrics reports of the shared limits. */
export interface SharedLimitsStatus {
  readonly redisInUse: boolean;
  /** Requests this process counted in its own windows for want of Redis, since it started. */
  readonly fallbackRequests: number;
}

export interface SharedLimits {
  /** Counts one request of `key` in `table`'s window, or in `fallback` while Redis is out of use; never rejects. */
  consume(table: LimitTable, key: string, fallback: RateLimiter): RateDecision | Promise<RateDecision>;
  status(): SharedLimitsStatus;
  /** Drops the connection and stops probing; the limiter counts in `fallback` from then on. */
  close(): void;
}

export interface SharedLimitsOptions {
  readonly url: string;
  readonly limit: RateLimit;
  readonly log: Logger;
  /** Instead of `REDIS_KEY_PREFIX` (tests). */
  readonly keyPrefix?: string;
}

/** A probe counts in a window of its own: proof that Redis runs the script and writes. */
const PROBE_WINDOW_MS = 1_000;

interface Connection extends CommandSender {
  connect(): Promise<unknown>;
  destroy(): void;
}

/** Redis gave no answer in time. */
export class RedisTimeoutError extends Error {
  override name = 'RedisTimeoutError';
}

/** Opens the shared limiter: in Redis, or, when the first connection fails, on this process's windows. */
export async function openSharedLimits(options: SharedLimitsOptions): Promise<SharedLimits> {
  const { Redis } = await import('ioredis');
  const { url, log, limit } = options;
  const windowMs = limit.windowSeconds * 1000;
  const prefix = options.keyPrefix ?? REDIS_KEY_PREFIX;
  let current: Connection | undefined;
  let opening: Connection | undefined;
  let probeTimer: NodeJS.Timeout | undefined;
  let closed = false;
  let fallbackRequests = 0;
  let outage = { since: 0, fallbackRequests: 0 };

  const connection = (): Connection => {
    const client = new Redis(url, {
      // Connected by open(), which bounds the wait; never reconnected: a probe opens a new connection.
      lazyConnect: true,
      retryStrategy: () => null,
      connectTimeout: REDIS_CONNECT_TIMEOUT_MS,
      // A command sent while the connection is down fails at once.
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
    });
    // The cause of a failed connect (ECONNREFUSED…): `connect()` itself rejects with "Connection is closed.".
    let cause: Error | undefined;
    const wrapped: Connection = {
      connect: () =>
        client.connect().catch((error: unknown) => {
          throw cause ?? error;
        }),
      destroy: () => client.disconnect(),
      sendCommand: ([command, ...args]) => client.call(command as string, ...args),
    };
    // Every failure also reaches a command or `connect()`; an 'error' without a listener would end the process.
    client.on('error', (error: Error) => {
      cause = error;
      lost(wrapped, error);
    });
    // A connection never keeps the process alive (contract §1, shutdown).
    client.on('connect', () => client.stream?.unref());
    return wrapped;
  };

  const open = async (): Promise<Connection> => {
    const client = connection();
    opening = client;
    try {
      await within(client.connect(), REDIS_CONNECT_TIMEOUT_MS);
      await within(countInWindow(client, `${prefix}probe`, PROBE_WINDOW_MS), REDIS_TIMEOUT_MS);
      return client;
    } catch (error) {
      client.destroy();
      throw error;
    } finally {
      if (opening === client) opening = undefined;
    }
  };

  const startOutage = (error: unknown) => {
    outage = { since: performance.now(), fallbackRequests };
    log.warn(REDIS_UNREACHABLE, errorFields(error));
    scheduleProbe();
  };

  function lost(client: Connection, error: unknown): void {
    if (client !== current) return;
    current = undefined;
    client.destroy();
    startOutage(error);
  }

  function scheduleProbe(): void {
    if (closed) return;
    probeTimer = setTimeout(probe, REDIS_PROBE_INTERVAL_MS);
    probeTimer.unref();
  }

  async function probe(): Promise<void> {
    probeTimer = undefined;
    let client: Connection;
    try {
      client = await open();
    } catch (error) {
      log.debug('rate limits: Redis still unreachable', errorFields(error));
      scheduleProbe();
      return;
    }
    if (closed) return client.destroy();
    current = client;
    log.info(REDIS_BACK, {
      outageMs: Math.round(performance.now() - outage.since),
      fallbackRequests: fallbackRequests - outage.fallbackRequests,
    });
  }

  try {
    current = await open();
    log.info(REDIS_IN_USE, { windowSeconds: limit.windowSeconds, limit: limit.limit });
  } catch (error) {
    startOutage(error);
  }

  const fallBack = (key: string, fallback: RateLimiter): RateDecision => {
    fallbackRequests += 1;
    return fallback.consume(key);
  };

  return {
    consume(table, key, fallback) {
      const client = current;
      if (client === undefined) return fallBack(key, fallback);
      return within(countInWindow(client, `${prefix}${table}:${key}`, windowMs), REDIS_TIMEOUT_MS).then(
        (window) => decide(limit.limit, window.count, window.msLeft),
        (error: unknown) => {
          lost(client, error);
          return fallBack(key, fallback);
        },
      );
    },
    status() {
      return { redisInUse: current !== undefined, fallbackRequests };
    },
    close() {
      closed = true;
      clearTimeout(probeTimer);
      const client = current;
      current = undefined;
      client?.destroy();
      opening?.destroy();
    },
  };
}

/**
 * `promise`, or a `RedisTimeoutError` after `ms`: a blackholed connection takes every write and answers none. Not
 * the client's `commandTimeout`, which would leave the connection in use; here the outage starts at once.
 */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  return withDeadline(promise, ms, () => new RedisTimeoutError(`Redis gave no answer within ${ms} ms`));
}
