/**
 * A streaming replica for safe reads (contract §17, `DATABASE_READ_URL`), and the monitor that says when it may
 * serve them: while it answers, is in recovery, and lags at most `REPLICA_MAX_LAG`.
 *
 * The lag is measured from the primary's positions: the replica is as far behind as the oldest position the primary
 * had that it has not replayed yet, so an idle primary and a caught-up replica have no lag, and a paused replay
 * gains lag from the moment the primary moves on. A change of state is logged once. A request reads no position
 * itself: `serves()` compares with what the last poll saw.
 */
import type { Logger } from '../base/logger.ts';
import { openDatabase, type Database } from '../db/database.ts';
import { withDeadline } from '../db/errors.ts';
import { parseLsn } from './lsn.ts';

/** How often the monitor reads the primary's and the replica's positions. */
export const REPLICA_POLL_MS = 200;
/** How long a poll may take before the replica counts as unreachable. */
export const REPLICA_POLL_TIMEOUT_MS = 1_000;
/** The most primary positions kept while the replica is behind (one per poll). */
const MAX_SAMPLES = 1_000;

export type ReplicaState = 'in-use' | 'lagging' | 'unreachable';

export interface ReplicaStatus {
  readonly state: ReplicaState;
  /** Seconds behind the primary, as last measured; `undefined` when unreachable. */
  readonly lagSeconds: number | undefined;
  /** Why it serves no reads: for /readyz and the log. */
  readonly reason?: string;
}

/** The reason of a replica that answers but is no standby: a failover promoted it, or the URL names a primary. */
export const NOT_A_STANDBY =
  'it is not a standby in recovery: after a failover it may be the new primary; point DATABASE_READ_URL at a ' +
  'standby of the current primary';

export interface Replica {
  readonly db: Database;
  /** Whether a read by a principal whose last write is at `position` may go to the replica, by the last poll. */
  serves(position: bigint | undefined): boolean;
  /** A statement on the replica failed for want of it: reads go to the primary until a poll sees it back. */
  failed(error: unknown): void;
  status(): ReplicaStatus;
  close(): Promise<void>;
}

export interface ReplicaOptions {
  readonly url: string;
  readonly primary: Database;
  readonly maxLagSeconds: number;
  readonly poolMax: number;
  readonly prepare: boolean;
  readonly log: Logger;
  /** Instead of `REPLICA_POLL_MS` (tests). */
  readonly pollMs?: number;
}

/** Opens the replica's pool and starts its monitor; the first poll has run when this resolves. */
export async function openReplica(options: ReplicaOptions): Promise<Replica> {
  const { primary, log, maxLagSeconds } = options;
  const pollMs = options.pollMs ?? REPLICA_POLL_MS;
  const db = await openDatabase({
    databaseUrl: options.url,
    dataDir: '',
    poolMax: options.poolMax,
    prepare: options.prepare,
    readOnly: true,
  });
  let state: ReplicaState = 'unreachable';
  let reason: string | undefined = 'not polled yet';
  // The state and reason last logged: a change of either is logged once.
  let announced: string | undefined;
  let lagSeconds: number | undefined;
  let replayed: bigint | undefined;
  // The primary's positions the replica had not replayed when seen, oldest first, with when they were seen.
  const behind: { lsn: bigint; at: number }[] = [];
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const enter = (next: ReplicaState, fields: Record<string, unknown>, why?: string) => {
    state = next;
    reason = why;
    const key = `${next} ${why ?? ''}`;
    if (key === announced) return;
    announced = key;
    const message = `read replica: ${next === 'in-use' ? 'in use' : `${next}, reads go to the primary`}`;
    if (next === 'in-use') log.info(message, fields);
    else log.warn(message, { ...fields, ...(why === undefined ? {} : { reason: why }) });
  };

  const poll = async () => {
    try {
      const [current, replica] = await withDeadline(
        Promise.all([primary.one('CurrentWalPosition'), db.one('ReplicaPosition')]),
        REPLICA_POLL_TIMEOUT_MS,
      );
      const now = performance.now();
      const primaryAt = parseLsn(current?.lsn);
      const replayedNow = parseLsn(replica?.replayed);
      if (replica?.recovery !== true || primaryAt === undefined || replayedNow === undefined) {
        replayed = undefined;
        lagSeconds = undefined;
        enter('unreachable', {}, replica?.recovery === true ? 'it reports no replayed position' : NOT_A_STANDBY);
        return;
      }
      replayed = replayedNow;
      if (primaryAt > replayedNow && (behind.length === 0 || (behind.at(-1) as { lsn: bigint }).lsn < primaryAt)) {
        if (behind.length >= MAX_SAMPLES) behind.splice(1, 1);
        behind.push({ lsn: primaryAt, at: now });
      }
      while (behind.length > 0 && (behind[0] as { lsn: bigint }).lsn <= replayedNow) behind.shift();
      lagSeconds = behind.length === 0 ? 0 : (now - (behind[0] as { at: number }).at) / 1000;
      if (lagSeconds > maxLagSeconds)
        enter('lagging', { lagSeconds, maxLagSeconds }, `it lags more than REPLICA_MAX_LAG (${maxLagSeconds} s)`);
      else enter('in-use', { lagSeconds });
    } catch (error) {
      replayed = undefined;
      lagSeconds = undefined;
      behind.length = 0;
      enter('unreachable', { error: String(error) }, unreachable(error));
    }
  };

  const loop = () => {
    if (closed) return;
    timer = setTimeout(() => {
      poll().finally(loop);
    }, pollMs);
    timer.unref();
  };

  await poll();
  loop();
  return {
    db,
    serves(position) {
      return state === 'in-use' && replayed !== undefined && (position === undefined || position <= replayed);
    },
    failed(error) {
      replayed = undefined;
      enter('unreachable', { error: String(error) }, unreachable(error));
    },
    status() {
      return { state, lagSeconds, ...(reason === undefined ? {} : { reason }) };
    },
    async close() {
      closed = true;
      clearTimeout(timer);
      await db.close();
    },
  };
}

/** The reason of a replica that cannot be reached, by the error's code: the same outage is one reason. */
function unreachable(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return `it cannot be reached (${typeof code === 'string' ? code : error instanceof Error ? error.name : 'error'})`;
}
