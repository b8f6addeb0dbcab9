/** The graceful shutdown of contract §1: the requests in flight, the webhook worker, Redis, the database. */
import type { ReplicaReads } from '../pipeline/context.ts';
import type { Database } from '../db/database.ts';
import type { NodeServer } from '../http/node-adapter.ts';
import type { SharedLimits } from '../limits/shared-limits.ts';

/** How long the webhook worker gets, after the requests, to record its aborted attempts on shutdown. */
export const WORKER_STOP_MS = 2_000;
/** How long requests in flight get to finish on shutdown (contract §1). */
export const SHUTDOWN_GRACE_MS = 10_000;

/**
 * Stops accepting at once; lets the requests in flight finish within
 * `graceMs`, then closes what is left; gives the worker (`workerStopped`)
 * at most WORKER_STOP_MS; closes Redis, the replica and the database last.
 */
export async function shutdown(
  server: NodeServer,
  db: Database,
  graceMs: number,
  workerStopped: Promise<void>,
  sharedLimits: SharedLimits | undefined,
  reads: ReplicaReads | undefined,
): Promise<void> {
  // Connections with no request in progress close now, the others after their response (contract §1).
  const closed = server.close();
  let timer: NodeJS.Timeout | undefined;
  const grace = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      server.closeAllConnections();
      resolve();
    }, graceMs);
  });
  await Promise.race([closed, grace]);
  clearTimeout(timer);
  sharedLimits?.close();
  // The worker's last claim or record may wait on a database that stopped
  // answering: give it a bounded time, then close the pool under it.
  let workerTimer: NodeJS.Timeout | undefined;
  await Promise.race([
    workerStopped,
    new Promise<void>((resolve) => {
      workerTimer = setTimeout(resolve, WORKER_STOP_MS);
    }),
  ]);
  clearTimeout(workerTimer);
  reads?.positions.close();
  await reads?.replica.close();
  await db.close();
}
