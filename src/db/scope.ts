/**
 * What one request has under way in the database (contract §17: a 503 means
 * the work was not done). Every statement a request's handles run is tracked
 * here until it settles, and a transaction's COMMIT while it is sent. When the
 * request gives up (its deadline passed), `abandon()` cancels them all: a
 * statement still queued for a connection is dropped and never sent, one sent
 * gets PostgreSQL's CancelRequest (its transaction then rolls back), and no
 * further statement of the request is sent. It tells whether anything may
 * have been done all the same: a COMMIT sent, or a write outside a
 * transaction sent, and not answered.
 */

/** A statement of the driver, as far as this needs it: `state` is set once it was sent on a connection. */
export interface DriverQuery {
  /** Patch 013: the cancellation's promise. */
  cancel(): Promise<unknown>;
  readonly state?: unknown;
}

/** What a pending piece of work is: a read (or a statement inside a transaction), a write on its own, a COMMIT. */
export type PendingKind = 'read' | 'write' | 'commit';

interface Pending {
  readonly query: DriverQuery | undefined;
  readonly kind: PendingKind;
}

/** What abandoning left behind: nothing done (`not-done`), or a write whose outcome cannot be known. */
export type Abandoned = 'not-done' | 'unknown';

export class RequestScope {
  // Made when the request first runs a statement: most requests that never reach the database make none.
  #pending: Set<Pending> | undefined;
  #abandoned = false;

  /** True once the request gave up: its handles send nothing more. */
  get abandoned(): boolean {
    return this.#abandoned;
  }

  /** Tracks `query` (a COMMIT has none) until the function returned is called, when it settled. */
  track(kind: PendingKind, query?: DriverQuery): () => void {
    const pending: Pending = { query, kind };
    this.#pending ??= new Set();
    const all = this.#pending;
    all.add(pending);
    return () => {
      all.delete(pending);
    };
  }

  /** Cancels everything pending, and says whether anything may have been done all the same. */
  abandon(): Abandoned {
    this.#abandoned = true;
    let unknown = false;
    for (const { query, kind } of this.#pending ?? []) {
      if (kind === 'commit' || (kind === 'write' && sent(query))) unknown = true;
      // Queued: dropped from the queue, never sent. Sent: a CancelRequest; its failure is the statement's own.
      query?.cancel().catch(() => {});
    }
    this.#pending?.clear();
    return unknown ? 'unknown' : 'not-done';
  }
}

/** Whether the driver wrote `query` on a connection (its `state` is the backend's, `null` until then). */
export function sent(query: DriverQuery | undefined): boolean {
  return query?.state !== null && query?.state !== undefined;
}
