/**
 * The delivery worker (SPEC §15): claims due deliveries with
 * `FOR UPDATE SKIP LOCKED` and a lease, so several server processes never
 * deliver one at the same time; POSTs each with the Standard Webhooks
 * headers; records every attempt; retries with exponential backoff for about
 * a day, then marks the delivery failed. At least once: a process that dies
 * mid-attempt leaves the lease to expire, and the delivery is sent again with
 * the same `webhook-id`.
 */
import { createHmac } from 'node:crypto';
import type { Database } from '../db/database.ts';
import { eventRepresentation, type EventRow } from '../events/log.ts';
import type { Logger } from '../log.ts';
import { postJson } from './transport.ts';

export interface WorkerOptions {
  /** How often to look for due deliveries. */
  readonly pollMs: number;
  /** How long a claimed delivery is reserved for its attempt (longer than the time-out). */
  readonly leaseSeconds: number;
  /** Seconds to wait before each retry; after the last, the delivery fails. */
  readonly retryDelaysSeconds: readonly number[];
  readonly timeoutMs: number;
  readonly batch: number;
  readonly allowPrivate: boolean;
}

/** Standard Webhooks' schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: about 27.6 hours, 8 attempts. */
export const DEFAULT_RETRY_DELAYS = [5, 300, 1800, 7200, 18_000, 36_000, 36_000];

export const DEFAULT_WORKER_OPTIONS: Omit<WorkerOptions, 'allowPrivate'> = {
  pollMs: 1000,
  leaseSeconds: 60,
  retryDelaysSeconds: DEFAULT_RETRY_DELAYS,
  timeoutMs: 10_000,
  batch: 20,
};

interface Claimed extends EventRow {
  id: number;
  attempts: number;
  url: string;
  secret: string;
  event_id: number;
}

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
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  // Aborts the attempts in flight on stop(): they are recorded as failed and retried later.
  const aborted = new AbortController();
  let running: Promise<void> = Promise.resolve();

  const attempt = async (delivery: Claimed): Promise<void> => {
    const id = `msg_${delivery.id}`;
    const body = JSON.stringify(eventRepresentation({ id: delivery.event_id, type: delivery.type, data: delivery.data, created_at: delivery.created_at }));
    const timestamp = Math.floor(Date.now() / 1000);
    const started = performance.now();
    const { status, error } = await postJson(
      delivery.url,
      { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': sign(delivery.secret, id, timestamp, body) },
      body,
      { timeoutMs: options.timeoutMs, allowPrivate: options.allowPrivate, signal: aborted.signal },
    );
    const ok = status !== null && status >= 200 && status < 300;
    const retryIn = options.retryDelaysSeconds[delivery.attempts - 1];
    const outcome = ok ? 'delivered' : retryIn === undefined ? 'failed' : 'pending';
    // Fenced by the attempt number: if this attempt outlived its lease and
    // another process claimed the delivery since, its result is dropped.
    const recorded = await db.one('RecordAttempt', [delivery.id, status, error, Math.round(performance.now() - started), outcome, ok || retryIn === undefined ? 0 : retryIn, delivery.attempts]);
    if (recorded === undefined) log.warn('webhook attempt outlived its lease; result dropped', { delivery: delivery.id, attempt: delivery.attempts, status });
    log.info('webhook attempt', { delivery: delivery.id, event: delivery.event_id, attempt: delivery.attempts, status, outcome, ...(error ? { error } : {}) });
  };

  const tick = async (): Promise<void> => {
    let claimed: Claimed[] = [];
    try {
      claimed = await db.many<Claimed>('ClaimDeliveries', [options.batch, options.leaseSeconds]);
      await Promise.all(claimed.map((delivery) => attempt(delivery).catch((error: unknown) => log.warn('webhook attempt not recorded', { delivery: delivery.id, error: String(error) }))));
    } catch (error) {
      log.warn('webhook worker could not claim deliveries', { error: String(error) });
    }
    if (!stopped) schedule(claimed.length === options.batch ? 0 : options.pollMs);
  };

  const schedule = (delay: number) => {
    timer = setTimeout(() => {
      running = tick();
    }, delay);
    timer.unref();
  };

  schedule(0);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      aborted.abort();
      await running;
    },
  };
}
