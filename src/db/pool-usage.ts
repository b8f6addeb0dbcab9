/**
 * How busy the pool is (GET /metrics), counted around every statement on the pool and every transaction, since the
 * driver exposes neither its busy connections nor its queue. A connection runs one statement or transaction at a
 * time (statements pipelined onto busy connections wait all the same), so of the active pieces of work, `size` at
 * most hold a connection and the rest wait.
 */
export interface PoolUsage {
  /** Connections the pool may open (`DB_POOL_MAX`; 1 for the embedded database). */
  readonly size: number;
  readonly inUse: number;
  readonly waiting: number;
  /** Whether statements are refused at once now (circuit.ts). */
  readonly circuitOpen: boolean;
}

/** The pool's use, and the wrappers that count a piece of work in it. */
export interface PoolCounter {
  readonly pool: PoolUsage;
  readonly counted: <T>(work: PromiseLike<T>) => Promise<T>;
  /** Counts a transaction from its wait for a connection until the function returned is first called. */
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
