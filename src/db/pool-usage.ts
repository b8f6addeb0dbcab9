/**
 * How busy the pool is (GET /metrics): pieces of work holding or waiting for
 * a connection, counted around each statement and transaction.
 */

/**
 * The pool's use, counted here around every statement run on the pool and
 * every transaction (its reserved connection), since the `postgres` driver
 * exposes neither its busy connections nor its queue. A statement inside a
 * transaction is the transaction's. A connection runs one statement or
 * transaction at a time (the driver pipelines further statements onto busy
 * connections, where they wait all the same), so of `active` pieces of
 * work, `size` at most hold a connection and the rest wait. Two additions
 * per statement: every request pays for it. Nothing of the driver is
 * changed: its callers count through `counted` and `held`.
 */
export interface PoolUsage {
  /** Connections the pool may open (`DB_POOL_MAX`; 1 for the embedded database). */
  readonly size: number;
  /** Connections busy with a statement or a transaction. */
  readonly inUse: number;
  /** Statements and transactions waiting for a connection. */
  readonly waiting: number;
  /** contract §17: whether statements are refused at once now, the database being out of reach (circuit.ts). */
  readonly circuitOpen: boolean;
}

/** The pool's use, and the wrappers that count a piece of work in it. */
export interface PoolCounter {
  readonly pool: PoolUsage;
  /** Counts `work` as active until it settles. */
  readonly counted: <T>(work: PromiseLike<T>) => Promise<T>;
  /**
   * Counts a transaction as active from its wait for a connection: the function returned ends it (once, however
   * often it is called), when the connection was released or never came.
   */
  readonly held: () => () => void;
}

/** Counts the use of a pool of `size` connections; `circuit` says whether the database is out of reach. */
export function countPoolUsage(size: number, circuit: { readonly open: boolean }): PoolCounter {
  let active = 0;
  const counted = async <T>(work: PromiseLike<T>): Promise<T> => {
    active += 1;
    try {
      return await work;
    } finally {
      active -= 1;
    }
  };
  const held = () => {
    active += 1;
    let holding = true;
    return () => {
      if (holding) active -= 1;
      holding = false;
    };
  };
  const pool: PoolUsage = {
    size,
    get inUse() {
      return Math.min(active, size);
    },
    get waiting() {
      return Math.max(0, active - size);
    },
    get circuitOpen() {
      return circuit.open;
    },
  };
  return { pool, counted, held };
}
