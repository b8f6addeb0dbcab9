/**
 * Read replicas (contract §17). A write's position is recorded for its
 * principal once it committed (or did not), before its answer leaves; a GET
 * or HEAD of a route marked `replica` goes to the replica when it is in use
 * and has replayed the principal's last write. A conditional GET the
 * replica does not answer 304 may name a newer revision than the replica
 * holds, so the primary answers it: never a stale 200 (and a 304 from the
 * replica is exact). Where the route knows its tag without building the
 * answer (an order's revision), the replica only tells that tag. A replica
 * that goes away under a read: the primary answers it, and the next ones.
 * Without `DATABASE_READ_URL` the stage does nothing.
 */
import { errorFields, type Logger } from '../../base/logger.ts';
import type { Principal } from '../../auth/authenticator.ts';
import type { Database } from '../../db/database.ts';
import { isDatabaseUnavailable } from '../../db/errors.ts';
import { parseLsn } from '../../replica/lsn.ts';
import { UNKNOWN } from '../../replica/positions.ts';
import { pass, type Stage } from '../compose.ts';
import type { ReplicaReads } from '../context.ts';
import { routeOf, type Exchange } from '../exchange.ts';

/** What the conditional stage answers when the replica's tag does not match: the primary is to answer. */
export const MISSED = new Response(null, { status: 412 });

export function replicaReads(reads: ReplicaReads | undefined, primary: Database, log: Logger): Stage<Exchange> {
  if (reads === undefined) return pass();
  const { replica, positions } = reads;

  /** Records where `userId` wrote: the primary's WAL position, now that the write committed (or did not). */
  async function recordWrite(userId: number, requestId: string): Promise<void> {
    try {
      const current = await primary.one<{ lsn: string }>('CurrentWalPosition');
      const lsn = parseLsn(current?.lsn);
      if (lsn !== undefined) await positions.record(userId, lsn);
    } catch (error) {
      // The write's answer stands; its reads find no position here and may read the replica once it
      // has caught up (a database that cannot say where it is has failed the write too, mostly).
      log.warn('read replica: the position of a write could not be recorded', { requestId, ...errorFields(error) });
    }
  }

  /** The replica when it may serve this principal's read, else the primary. */
  async function readerFor(who: Principal | undefined): Promise<Database> {
    if (!replica.serves(undefined)) return primary;
    const position = who === undefined ? undefined : await positions.lookup(who.userId);
    return position !== UNKNOWN && replica.serves(position) ? replica.db : primary;
  }

  return async (x, next) => {
    const { method } = x.request;
    if (method !== 'GET' && method !== 'HEAD') {
      try {
        return await next(x);
      } finally {
        if (x.principal !== undefined) await recordWrite(x.principal.userId, x.requestId);
      }
    }
    const source = routeOf(x).replica === true ? await readerFor(x.principal) : primary;
    if (source === primary) return next(x);
    const onPrimary = () => {
      x.source = primary;
      x.handle = undefined;
      x.tagOnly = false;
      return next(x);
    };
    try {
      x.source = source;
      const conditional = x.header('if-none-match') !== null;
      x.tagOnly = conditional;
      const response = await next(x);
      if (response === MISSED || (conditional && response.status !== 304)) return onPrimary();
      return response;
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
      replica.failed(error);
      return onPrimary();
    }
  };
}
