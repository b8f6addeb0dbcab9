/**
 * Fast failure while the database is out of reach (contract §17): after `FAILURES_TO_OPEN` connection failures in
 * a row, every statement is refused at once (`DatabaseUnreachable`, 503) instead of waiting its request's 5 s, and
 * one probe at a time tries the database. The first statement that reaches it, a probe or one already on its way,
 * closes the circuit.
 */
import { DatabaseUnreachable, isConnectionFailure } from './errors.ts';

/** Statements in a row that failed to reach the database before the circuit opens. */
export const FAILURES_TO_OPEN = 3;

export interface Circuit {
  /** Throws `DatabaseUnreachable` while the circuit is open. */
  check(): void;
  /** A statement reached the database (answered, with rows or with an error of its own). */
  reached(): void;
  failed(error: unknown): void;
  /** Whether statements are refused now (GET /metrics, /readyz). */
  readonly open: boolean;
  stop(): void;
}

export interface CircuitOptions {
  readonly probe: () => Promise<unknown>;
  /** Milliseconds before the `attempt`-th probe of an outage (1, 2, …). */
  readonly delayMs: (attempt: number) => number;
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
