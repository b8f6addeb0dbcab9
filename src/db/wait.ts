/**
 * Start-up's wait for the database (`DATABASE_WAIT`), with backoff so that a pooler in front of a stopped server is
 * not asked for a login hundreds of times a second. A failure that is not about reaching the database (a pooler
 * that needs DB_PREPARE=off, a wrong password) is thrown at once: waiting would not mend it.
 */
import type { Database } from './database.ts';
import { DATABASE_UNREACHABLE, isDatabaseUnavailable, poolerHint } from './errors.ts';
import { RequestScope } from './cancellation.ts';
import { firstPeer, identifyPeer, type Peer } from './peer.ts';
import type { Config } from '../config/config.ts';
import type { Logger } from '../base/logger.ts';

/** The first wait between attempts, doubled after each up to `MAX_DELAY_MS`. */
export const FIRST_DELAY_MS = 250;
export const MAX_DELAY_MS = 5_000;
/** One attempt's bound, as the driver's connect time-out. */
export const ATTEMPT_MS = 5_000;
/** The least time an attempt is given: one that cannot have it within the wait is not made. */
export const MIN_ATTEMPT_MS = 250;
/** How long the peer is given to answer an SSLRequest. */
export const PEER_PROBE_MS = 500;
// Failures where something took the connection but gave no SQLSTATE: what it is is worth asking (not for a
// refusal, where nothing answered, nor for an error PostgreSQL or a pooler sent, which says what it is).
const ASK_PEER = new Set([
  'CONNECT_TIMEOUT',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
]);
/** At most one log line per this. */
export const LOG_INTERVAL_MS = 1_000;

/** The database did not answer within `DATABASE_WAIT`. */
export class DatabaseWaitError extends Error {
  override name = 'DatabaseWaitError';
}

export interface WaitOptions {
  readonly waitMs: number;
  /** `DATABASE_URL`'s first host, asked once what it is (`peer.ts`). */
  readonly peer?: Peer;
  /** Told of failed attempts, at most once a `LOG_INTERVAL_MS`. */
  readonly onAttempt?: (fields: { attempt: number; reason: string; nextInMs: number; waitedMs: number }) => void;
}

/** Resolves once the database answers `Ping`; rejects with a `DatabaseWaitError` after `waitMs`. */
export async function waitForDatabase(db: Database, options: WaitOptions): Promise<void> {
  const start = performance.now();
  let lastLog = -Infinity;
  // Once the circuit is open, attempts are refused without reaching out: the reason is the last real failure's.
  let reason = '';
  let peerIs: string | undefined;
  for (let attempt = 1; ; attempt++) {
    const left = options.waitMs - (performance.now() - start);
    let failure: unknown;
    try {
      // DATABASE_WAIT=0 is one attempt, of the usual length.
      await ping(db, options.waitMs === 0 ? ATTEMPT_MS : Math.max(MIN_ATTEMPT_MS, Math.min(ATTEMPT_MS, left)));
      return;
    } catch (error) {
      if (!isDatabaseUnavailable(error) || poolerHint(error) !== undefined || refusedLogin(error)) throw error;
      failure = error;
    }
    const code = (failure as { code?: unknown }).code;
    // Something accepted the connection but no PostgreSQL login came of it: what is it?
    const ask = typeof code === 'string' && ASK_PEER.has(code);
    if (peerIs === undefined && options.peer !== undefined && ask)
      peerIs = await identifyPeer(options.peer, PEER_PROBE_MS);
    const waitedMs = performance.now() - start;
    if (code !== DATABASE_UNREACHABLE || reason === '')
      reason = reasonOf(failure) + (peerIs === undefined || !ask ? '' : `; ${peerIs}`);
    // The last wait is shortened to leave a last attempt its `MIN_ATTEMPT_MS` within the wait; no room for it: done.
    const room = options.waitMs - waitedMs - MIN_ATTEMPT_MS;
    const nextInMs = Math.min(FIRST_DELAY_MS * 2 ** (attempt - 1), MAX_DELAY_MS, room);
    if (nextInMs < 0) {
      throw new DatabaseWaitError(
        `the database did not answer within DATABASE_WAIT (${options.waitMs / 1000} s, ${attempt} ` +
          `attempt${attempt === 1 ? '' : 's'}): ${reason}`,
      );
    }
    if (performance.now() - lastLog >= LOG_INTERVAL_MS) {
      lastLog = performance.now();
      options.onAttempt?.({ attempt, reason, nextInMs: Math.round(nextInMs), waitedMs: Math.round(waitedMs) });
    }
    await new Promise((resolve) => setTimeout(resolve, nextInMs));
  }
}

/** The server's wait for its database, each failed attempt a `warn` line. */
export function awaitDatabase(db: Database, config: Config, log: Logger): Promise<void> {
  const peer = firstPeer(config.databaseUrl);
  return waitForDatabase(db, {
    waitMs: config.databaseWaitMs,
    ...(peer === undefined ? {} : { peer }),
    onAttempt: (fields) => log.warn('database not answering; waiting (DATABASE_WAIT)', fields),
  });
}

/** One `Ping`, given up (and its statement cancelled or dropped) after `ms`. */
async function ping(db: Database, ms: number): Promise<void> {
  const scope = new RequestScope();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      scope.abandon();
      const within = ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;
      reject(Object.assign(new Error(`no answer within ${within}`), { code: 'CONNECT_TIMEOUT' }));
    }, ms);
  });
  try {
    await Promise.race([db.handle(scope).one('Ping'), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A login refused for its credentials or its database: PostgreSQL says 28P01 or 28000 (3D000 is no connection
 * fault at all), PgBouncer 08P01 with one of these messages, or its server's `database "…" does not exist`.
 */
function refusedLogin(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  const refused = /authentication failed|no such database|no such user|does not exist/;
  return code === '28P01' || code === '28000' || (typeof message === 'string' && refused.test(message));
}

/** The failure's code and message. */
function reasonOf(error: unknown): string {
  const { code, message } = error as { code?: unknown; message?: unknown };
  const text = typeof message === 'string' ? message : String(error);
  return typeof code === 'string' && !text.includes(code) ? `${code}: ${text}` : text;
}
