/**
 * The delivery worker (contract §15): claims due deliveries with
 * `SKIP LOCKED` and a lease, so several server processes never deliver one
 * at the same time; POSTs each with the Standard Webhooks headers; records
 * every attempt; retries with exponential backoff for about a day, then marks
 * the delivery failed. At least once: a process that dies mid-attempt leaves
 * the lease to expire, and the delivery is sent again with the same
 * `webhook-id`.
 *
 * Attempts run independently, up to `concurrency` at a time in a process,
 * and at most one per endpoint across all processes (contract §17): the claim
 * takes the endpoint's lease in the database with the delivery's, and the
 * record of the attempt releases it. Each attempt is recorded when it ends,
 * and the worker claims again at once, so an attempt that takes its whole
 * time-out holds its own slot and its own endpoint's queue, and delays no
 * other endpoint.
 */
import { createHmac } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { Database, RowOf } from '../db/database.ts';
import { eventRepresentation } from '../outbox/outbox.ts';
import type { Logger } from '../base/logger.ts';
import { postJson } from './transport.ts';

export interface WorkerOptions {
  /** How often to look for due deliveries. */
  readonly pollMs: number;
  /** How long a claimed delivery and its endpoint are reserved for the attempt (longer than the time-out). */
  readonly leaseSeconds: number;
  /** Seconds to wait before each retry; after the last, the delivery fails. */
  readonly retryDelaysSeconds: readonly number[];
  /** The deadline of one attempt, from the lookup to a 2xx answer's head, or another answer's last byte. */
  readonly timeoutMs: number;
  /** How many attempts may be in flight at once in this process (never two to one endpoint, in all processes). */
  readonly concurrency: number;
  readonly allowPrivate: boolean;
  /** Told of each claim: started by the poll, or at once when a slot came free; and the deliveries it took. */
  readonly observe?: (claim: { readonly trigger: 'poll' | 'freed'; readonly deliveries: readonly number[] }) => void;
}

/** Standard Webhooks' schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: about 27.6 hours, 8 attempts. */
export const DEFAULT_RETRY_DELAYS = [5, 300, 1800, 7200, 18_000, 36_000, 36_000];

export const DEFAULT_WORKER_OPTIONS: Omit<WorkerOptions, 'allowPrivate'> = {
  pollMs: 1000,
  leaseSeconds: 60,
  retryDelaysSeconds: DEFAULT_RETRY_DELAYS,
  timeoutMs: 10_000,
  concurrency: 20,
};

/** A delivery claimed, with its endpoint and its event. */
type Claimed = RowOf<'ClaimDeliveries'>;

/**
 * The `webhook-signature` value (Standard Webhooks): `v1,` and the base64
 * HMAC-SHA256, keyed with the secret's base64 part, of `id.timestamp.body`.
 */
export function sign(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

export interface DeliveryWorker {
  /** Stops claiming, aborts the attempts in flight, and waits until they are recorded. */
  stop(): Promise<void>;
}

export function startDeliveryWorker(db: Database, log: Logger, options: WorkerOptions): DeliveryWorker {
  if (!Number.isInteger(options.concurrency) || options.concurrency < 1)
    throw new RangeError(`webhook worker: concurrency must be a positive integer, not ${options.concurrency}`);
  // An attempt that outlived its lease could run beside the next claim of its endpoint (contract §17).
  if (options.leaseSeconds * 1000 <= options.timeoutMs)
    throw new RangeError(
      `webhook worker: the lease (${options.leaseSeconds} s) must outlast the time-out (${options.timeoutMs} ms)`,
    );
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let claiming: Promise<void> | undefined;
  // An attempt ended while a claim ran: its slot and its endpoint's next delivery were not seen by that claim.
  let freedWhileClaiming = false;
  // Aborts the attempts in flight on stop(): they are recorded as failed and retried later.
  const aborted = new AbortController();
  // Each attempt in flight listens on it (transport.ts): up to `concurrency` at once, not a leak.
  setMaxListeners(Math.max(10, options.concurrency), aborted.signal);
  const inFlight = new Set<Promise<void>>();

  const attempt = async (delivery: Claimed): Promise<void> => {
    const id = `msg_${delivery.id}`;
    const body = JSON.stringify(
      eventRepresentation({
        id: delivery.event_id,
        type: delivery.type,
        data: delivery.data,
        created_at: delivery.created_at,
      }),
    );
    const timestamp = Math.floor(Date.now() / 1000);
    const started = performance.now();
    const { status, error } = await postJson(
      delivery.url,
      {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': sign(delivery.secret, id, timestamp, body),
      },
      body,
      { timeoutMs: options.timeoutMs, allowPrivate: options.allowPrivate, signal: aborted.signal },
    );
    const durationMs = Math.round(performance.now() - started);
    // Any 2xx acknowledges: the transport settles it, error null, once its head arrives, whatever its body does.
    const ok = error === null && status !== null && status >= 200 && status < 300;
    const retryIn = options.retryDelaysSeconds[delivery.attempts - 1];
    const outcome = ok ? 'delivered' : retryIn === undefined ? 'failed' : 'pending';
    // Fenced by the attempt number: if this attempt outlived its lease and
    // another process claimed the delivery since, its result is dropped; and
    // the endpoint's lease is released only if this attempt still holds it.
    const recorded = await db.opt('RecordAttempt', [
      delivery.id,
      status,
      error,
      durationMs,
      outcome,
      ok || retryIn === undefined ? 0 : retryIn,
      delivery.attempts,
    ]);
    if (recorded === undefined)
      log.warn('webhook attempt outlived its lease; result dropped', {
        delivery: delivery.id,
        attempt: delivery.attempts,
        status,
      });
    const fields = {
      delivery: delivery.id,
      event: delivery.event_id,
      attempt: delivery.attempts,
      status,
      outcome,
      durationMs,
      ...(error ? { error } : {}),
    };
    if (ok) log.info('webhook attempt', fields);
    else log.warn('webhook attempt', fields);
  };

  const run = (delivery: Claimed) => {
    const done: Promise<void> = attempt(delivery)
      .catch((error: unknown) =>
        log.warn('webhook attempt not recorded', { delivery: delivery.id, error: String(error) }),
      )
      .finally(() => {
        inFlight.delete(done);
        // At once: the endpoint may have more due, which no claim could take while this attempt held its lease.
        wake(0);
      });
    inFlight.add(done);
  };

  /**
   * Claims as many due deliveries as there are free slots (at least one: see
   * wake), at most one per endpoint and none for an endpoint whose lease
   * another attempt holds, in this process or another, and starts them.
   */
  const claim = async (trigger: 'poll' | 'freed'): Promise<void> => {
    const free = options.concurrency - inFlight.size;
    freedWhileClaiming = false;
    let claimed: Claimed[] = [];
    try {
      claimed = await db.many('ClaimDeliveries', [free, options.leaseSeconds]);
    } catch (error) {
      log.warn('webhook worker could not claim deliveries', { error: String(error) });
    }
    options.observe?.({ trigger, deliveries: claimed.map((d) => d.id) });
    // Claimed after a stop() has started: the aborted signal ends these at once, recorded for a retry.
    for (const delivery of claimed) run(delivery);
  };

  /**
   * Claims again after `delay` ms, unless an earlier claim is already set;
   * while a claim runs, a call with no delay makes it claim again at once
   * when it ends. Called only with a slot free.
   */
  const wake = (delay: number) => {
    if (stopped) return;
    if (claiming !== undefined) {
      if (delay === 0) freedWhileClaiming = true;
      return;
    }
    if (timer !== undefined) {
      if (delay > 0) return;
      clearTimeout(timer);
    }
    timer = setTimeout(() => {
      timer = undefined;
      claiming = claim(delay === 0 ? 'freed' : 'poll').finally(() => {
        claiming = undefined;
        // Full: the next attempt to end wakes the worker. Else whatever was
        // due and claimable has been claimed, unless an attempt ended meanwhile.
        if (inFlight.size < options.concurrency) wake(freedWhileClaiming ? 0 : options.pollMs);
      });
    }, delay);
    timer.unref();
  };

  wake(0);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      aborted.abort();
      await claiming;
      await Promise.all(inFlight);
    },
  };
}
