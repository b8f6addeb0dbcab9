/**
 * Fast failure while the database is out of reach (contract §17). After
 * `FAILURES_TO_OPEN` statements in a row failed to reach it (refused, reset,
 * closed, timed out: `isConnectionFailure()`), the circuit opens: every
 * statement is refused at once (`DatabaseUnreachable`, 503) instead of
 * waiting its request's 5 s, and one probe at a time tries the database,
 * with backoff (50 ms doubling to 1 s, with jitter). The first statement
 * that reaches it, a probe or one already on its way, closes the circuit.
 * A database that answers, even with an error, is reachable.
 */
import { DatabaseUnreachable, isConnectionFailure } from './errors.ts';

/** Statements in a row that failed to reach the database before the circuit opens. */
export const FAILURES_TO_OPEN = 3;

export interface Circuit {
  /** Throws `DatabaseUnreachable` while the circuit is open: the statement is not sent. */
  check(): void;
  /** A statement reached the database (answered, with rows or with an error of its own). */
  reached(): void;
  /** A statement failed with `error`: counted when it says the database could not be reached. */
  failed(error: unknown): void;
  /** Whether statements are refused now (GET /metrics, /readyz). */
  readonly open: boolean;
  /** Stops probing (the pool is closing). */
  stop(): void;
}

export interface CircuitOptions {
  /** Tries the database once: resolves when it answered, rejects when it did not. */
  readonly probe: () => Promise<unknown>;
  /** Milliseconds before the `attempt`-th probe of an outage (1, 2, …). */
  readonly delayMs: (attempt: number) => number;
  /** Told when the circuit opens (with the last failure) and when it closes (with the outage's length). */
  readonly onOpen?: (error: unknown) => void;
  readonly onClose?: (outageMs: number) => void;
}

export function createCircuit(options: CircuitOptions): Circuit {
  let failures = 0;
  let openedAt: number | undefined;
  let timer: NodeJS.Timeout | undefined;
  let attempt = 0;
  let stopped = false;

  const close = () => {
    failures = 0;
    if (openedAt === undefined) return;
    const outageMs = performance.now() - openedAt;
    openedAt = undefined;
    clearTimeout(timer);
    timer = undefined;
    options.onClose?.(outageMs);
  };

  const scheduleProbe = () => {
    if (stopped || openedAt === undefined) return;
    attempt += 1;
    timer = setTimeout(() => {
      options.probe().then(close, (error: unknown) => {
        // A database that answered, even with an error, is reachable.
        if (isConnectionFailure(error)) scheduleProbe();
        else close();
      });
    }, options.delayMs(attempt));
    timer.unref();
  };

  return {
    check() {
      if (openedAt !== undefined)
        throw new DatabaseUnreachable('the database cannot be reached (the last statements failed to reach it)');
    },
    reached: close,
    failed(error) {
      if (!isConnectionFailure(error)) return close();
      failures += 1;
      if (failures < FAILURES_TO_OPEN || openedAt !== undefined) return;
      openedAt = performance.now();
      attempt = 0;
      options.onOpen?.(error);
      scheduleProbe();
    },
    get open() {
      return openedAt !== undefined;
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
