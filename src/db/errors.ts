/** Which database errors mean "the database cannot be reached" (contract §5: 503) rather than a bug. */

/** The code of `DeadlineExceeded`. */
export const DEADLINE_EXCEEDED = 'DATABASE_DEADLINE_EXCEEDED';

/** A request's database work did not finish within its deadline (contract §11), and none of it was done. */
export class DeadlineExceeded extends Error {
  override name = 'DeadlineExceeded';
  readonly code = DEADLINE_EXCEEDED;
  constructor(readonly ms: number) {
    super(`the database did not answer within ${ms} ms`);
  }
}

/** Settles like `work`, or rejects with `DeadlineExceeded` (or what `late` makes) after `ms`. */
export function withDeadline<T>(work: Promise<T>, ms: number, late?: () => Error): Promise<T> {
  // One promise and one timer: this runs on every request.
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(late === undefined ? new DeadlineExceeded(ms) : late()), ms);
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/** A request's time for the database, paused while its body is read: the upload is not the database's wait. */
export interface Deadline {
  pause(): void;
  resume(): void;
  readonly expired: boolean;
}

/** A request's clock for the database, with what races it. */
export interface RequestClock extends Deadline {
  /** Settles like `work`, or rejects with the expiry's error once the clock has run its time, pauses left out. */
  race<T>(work: Promise<T>): Promise<T>;
  settle(): void;
}

/** A clock of `ms` started now; `expired()` makes the error races reject with. */
export function startDeadline(ms: number, expired: () => Error = () => new DeadlineExceeded(ms)): RequestClock {
  return new PausableDeadline(ms, expired);
}

/** One request's clock: a class, so that a request makes one object and one timer for it. */
class PausableDeadline implements RequestClock {
  readonly #expired: () => Error;
  #left: number;
  #since = performance.now();
  #timer: NodeJS.Timeout | undefined;
  #lapse: Promise<never> | undefined;
  #reject: ((error: Error) => void) | undefined;
  #error: Error | undefined;
  expired = false;

  constructor(ms: number, expired: () => Error) {
    this.#left = ms;
    this.#expired = expired;
    this.#timer = setTimeout(() => this.#expire(), ms);
  }

  race<T>(work: Promise<T>): Promise<T> {
    if (this.#error !== undefined) {
      work.catch(() => {});
      return Promise.reject(this.#error);
    }
    this.#lapse ??= new Promise<never>((_, reject) => {
      this.#reject = reject;
    });
    // The race handles a late failure of the work that lost it: nobody waits for it.
    return Promise.race([work, this.#lapse]);
  }

  pause(): void {
    if (this.#timer === undefined || this.expired) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#left -= performance.now() - this.#since;
  }

  resume(): void {
    if (this.#timer !== undefined || this.expired) return;
    this.#since = performance.now();
    this.#timer = setTimeout(() => this.#expire(), Math.max(0, this.#left));
  }

  settle(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #expire(): void {
    this.expired = true;
    this.#timer = undefined;
    this.#error = this.#expired();
    this.#reject?.(this.#error);
  }
}

/** The code of `OutcomeUnknown`. */
export const OUTCOME_UNKNOWN = 'DATABASE_OUTCOME_UNKNOWN';

/**
 * A write (a COMMIT, or a write outside a transaction) was sent and no answer came: it may or may not have been
 * done. Answered 503 `outcome-unknown`: the client retries with its `Idempotency-Key`, or looks the resource up.
 */
export class OutcomeUnknown extends Error {
  override name = 'OutcomeUnknown';
  readonly code = OUTCOME_UNKNOWN;
  /** `later`: what came of it, once the database tells (a COMMIT's transaction looked up by its id). */
  constructor(
    cause?: unknown,
    readonly later?: Promise<'committed' | 'rolled-back' | 'unknown'>,
  ) {
    super('a write was sent to the database and no answer came: it may or may not have been done', { cause });
  }
}

/** What the log says, with the request's id and `resolution`, once an `outcome-unknown` answer's write is known. */
export const OUTCOME_KNOWN = 'database: the outcome of an outcome-unknown answer is known';

/** The code of `DatabaseUnreachable`. */
export const DATABASE_UNREACHABLE = 'DATABASE_UNREACHABLE';

/** The circuit is open or the queue for connections is full: the statement was never sent. */
export class DatabaseUnreachable extends Error {
  override name = 'DatabaseUnreachable';
  readonly code = DATABASE_UNREACHABLE;
}

// Raised by node's sockets and by postgres.js itself.
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOENT',
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  // patch 012: every host was tried and none fitted target_session_attrs (a failover's promotion under way).
  'TARGET_SESSION_ATTRS',
  DEADLINE_EXCEEDED,
  DATABASE_UNREACHABLE,
]);

// Not done, try later: class 08 (connection), the server shutting down, starting up or out of slots, a statement
// cancelled, a server not (yet) a primary (25006: a standby being promoted, or a primary restarted read-only), and
// a conflict (40001, 40P01) that its retries met again (retryingConflicts).
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '57014', '25006', '40001', '40P01']);

/** Whether `error` says the database is unreachable, overloaded or shutting down. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return false;
  return CONNECTION_CODES.has(code) || UNAVAILABLE_SQLSTATES.has(code) || /^08[0-9A-Z]{3}$/.test(code);
}

// Unavailable, but reached (or the service's own doing): not counted by the circuit.
const NOT_CONNECTION_FAILURES = new Set([
  DEADLINE_EXCEEDED,
  DATABASE_UNREACHABLE,
  '57014',
  '25006',
  '53300',
  '40001',
  '40P01',
]);

/** Whether `error` says the database could not be reached or dropped the connection. */
export function isConnectionFailure(error: unknown): boolean {
  if (!isDatabaseUnavailable(error)) return false;
  return !NOT_CONNECTION_FAILURES.has((error as { code: string }).code);
}

/** The PostgreSQL error code of a unique-constraint violation. */
export const UNIQUE_VIOLATION = '23505';

/** The embedded database cannot be opened. */
export class EmbeddedDatabaseError extends Error {
  override name = 'EmbeddedDatabaseError';
}

/**
 * The fix when `error` points at a transaction-mode pooler in front of `DB_PREPARE=on`: a prepared statement the
 * server session does not know (26000), or a startup parameter the pooler refuses.
 */
export function poolerHint(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, message } = error as { code?: unknown; message?: unknown };
  const refused = typeof message === 'string' && message.startsWith('unsupported startup parameter');
  if (code !== '26000' && !refused) return undefined;
  return 'a transaction-mode pooler (PgBouncer) between the service and PostgreSQL needs DB_PREPARE=off';
}
