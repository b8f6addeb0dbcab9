/**
 * Read replicas (contract §17). A write's position is recorded for its principal before its answer leaves. A GET
 * or HEAD of a `replica` route reads on the replica once it has replayed the principal's last write. A
 * conditional one reads only its `currentTag` there, whose 304 is exact (a tag the replica does not match may be
 * newer than it holds: the 200 is built on the primary); without `currentTag`, the primary.
 */
import { errorFields, type Logger } from '../../base/logger.ts';
import type { Principal } from '../../auth/authenticator.ts';
import type { Db, Tx } from '../../db/database.ts';
import { isDatabaseUnavailable } from '../../db/errors.ts';
import { parseLsn } from '../../replica/lsn.ts';
import { UNKNOWN } from '../../replica/positions.ts';
import { pass, type Stage } from '../compose.ts';
import type { ReplicaReads } from '../context.ts';
import { routeOf, type Exchange, type Source } from '../exchange.ts';

/** The replica stage; nothing without `DATABASE_READ_URL`. */
export function replicaReads(
  reads: ReplicaReads | undefined,
  primary: Source & Pick<Db, 'one'>,
  log: Logger,
): Stage<Exchange> {
  if (reads === undefined) return pass();
  const { replica, positions } = reads;
  const onReplica: Source = {
    handle: (scope) =>
      fallingBack(
        replica.db.handle(scope),
        () => primary.handle(scope),
        (e) => replica.failed(e),
      ),
  };

  /** Records where `userId` wrote: the primary's WAL position, now that the write committed (or did not). */
  async function recordWrite(userId: number, requestId: string): Promise<void> {
    try {
      const current = await primary.one('CurrentWalPosition');
      const lsn = parseLsn(current?.lsn);
      if (lsn !== undefined) await positions.record(userId, lsn);
    } catch (error) {
      // The write's answer stands; its reads find no position here and may read the replica once it
      // has caught up (a database that cannot say where it is has failed the write too, mostly).
      log.warn('read replica: the position of a write could not be recorded', { requestId, ...errorFields(error) });
    }
  }

  /** Whether the replica may serve this principal's read. */
  async function serves(who: Principal | undefined): Promise<boolean> {
    if (!replica.serves(undefined)) return false;
    const position = who === undefined ? undefined : await positions.lookup(who.userId);
    return position !== UNKNOWN && replica.serves(position);
  }

  return async (x, next) => {
    const route = routeOf(x);
    if (route.plan.writes) {
      try {
        return await next(x);
      } finally {
        if (x.principal !== undefined) await recordWrite(x.principal.userId, x.requestId);
      }
    }
    if (!route.plan.replica || !(await serves(x.principal))) return next(x);
    if (x.header('if-none-match') === null) x.source = onReplica;
    else if (route.currentTag !== undefined) x.tagSource = onReplica;
    return next(x);
  };
}

/**
 * A read handle on the replica that turns to the primary's from the first statement the replica fails for want
 * of it: that statement runs again there (a read changes nothing), and so do the next.
 */
export function fallingBack(onReplica: Db, primary: () => Db, failed: (error: unknown) => void): Db {
  let current = onReplica;
  async function run<T>(work: (db: Db) => Promise<T>): Promise<T> {
    const on = current;
    if (on !== onReplica) return work(on);
    try {
      return await work(on);
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
      // Once, however many statements were under way on the replica when it failed.
      if (current === onReplica) {
        failed(error);
        current = primary();
      }
      return work(current);
    }
  }
  return {
    one: (name, ...params) => run((db) => db.one(name, ...params)),
    opt: (name, ...params) => run((db) => db.opt(name, ...params)),
    batched: (read, params) => run((db) => db.batched(read, params)),
    many: (name, ...params) => run((db) => db.many(name, ...params)),
    exec: (name, ...params) => run((db) => db.exec(name, ...params)),
    composed: (name, fragments, params) => run((db) => db.composed(name, fragments, params)),
    begin: <T>(work: (db: Tx) => Promise<T>) => run((db) => db.begin(work)),
    get pool() {
      return current.pool;
    },
  };
}
