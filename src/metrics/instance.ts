/**
 * One view of the figures per instance (contract §13). With `WORKERS=N` the worker that takes a scrape asks the
 * primary over the cluster's IPC channel, sending its own figures along; the primary asks every other live worker,
 * sums their figures with those of the workers that exited and its own, and answers. A worker silent past
 * `SNAPSHOT_TIMEOUT_MS` is counted with its last figures, so a scrape never hangs and never goes back. Outside a
 * cluster a process's view is its own figures.
 *
 * The messages, plain objects whose `metrics` field names them (a worker's
 * other message, `{ listening }`, has none), `id` pairing a question with its answer:
 *
 * - worker → primary `{ metrics: 'view?', id, figures }`: the instance's view, please; here are mine.
 * - primary → worker `{ metrics: 'figures?', id }`: your figures, please.
 * - worker → primary `{ metrics: 'figures', id, figures }`: here they are.
 * - primary → worker `{ metrics: 'view', id, view }`: the sum.
 */
import cluster from 'node:cluster';
import type { Logger } from '../base/logger.ts';
import type { PoolUsage } from '../db/pool-usage.ts';
import type { HttpMetrics } from './http-metrics.ts';
import {
  poolSnapshot,
  processSnapshot,
  sharedLimitsSnapshot,
  startTimeSnapshot,
  type SharedLimitsFigures,
} from './process-figures.ts';
import { atLeast, EMPTY_SNAPSHOT, mergeSnapshots, retired, type Snapshot } from './snapshot.ts';

/** How long the primary waits for a worker's figures; past it, the worker's last ones stand in. */
export const SNAPSHOT_TIMEOUT_MS = 1_000;
/** How long a worker waits for the primary's view (bounded by `SNAPSHOT_TIMEOUT_MS`); past it the scrape fails. */
export const VIEW_TIMEOUT_MS = 3 * SNAPSHOT_TIMEOUT_MS;

export interface InstanceView {
  readonly figures: Snapshot;
  /** With `WORKERS=N`: the workers whose figures are in the sum. */
  readonly workers?: number;
  /** With `WORKERS=N`: those of them that did not answer in time, counted with their last figures. */
  readonly stale?: number;
}

export type MetricsMessage =
  | { readonly metrics: 'view?'; readonly id: number; readonly figures: Snapshot }
  | { readonly metrics: 'figures?'; readonly id: number }
  | { readonly metrics: 'figures'; readonly id: number; readonly figures: Snapshot }
  | { readonly metrics: 'view'; readonly id: number; readonly view: InstanceView };

/** The primary did not answer a worker's question in time: the scrape fails (a gap, never a reset). */
export class InstanceViewTimeoutError extends Error {
  override name = 'InstanceViewTimeoutError';
  constructor() {
    super(`the cluster's primary sent no metrics view within ${VIEW_TIMEOUT_MS} ms`);
  }
}

/** A process's own figures: its requests (`recorder`), its pool, its shared rate limits, its CPU time and memory. */
export function localSnapshot(
  recorder: HttpMetrics,
  pool: PoolUsage,
  limits: SharedLimitsFigures | undefined,
): Snapshot {
  return mergeSnapshots([recorder.snapshot(), poolSnapshot(pool), sharedLimitsSnapshot(limits), processSnapshot()]);
}

// ---- In a worker (and in a process outside any cluster) ----

let ownFigures: (() => Snapshot) | undefined;
let listening = false;
let nextQuestion = 0;
const questions = new Map<number, (view: InstanceView) => void>();

/** In a cluster worker: answers the primary's questions for this process's figures with `figures()`. */
export function answerPrimary(figures: () => Snapshot): void {
  ownFigures = figures;
  listen();
}

/** The instance's figures: in a cluster worker, the primary's sum (sent `local`); elsewhere `local`, with its start. */
export function instanceView(local: Snapshot): Promise<InstanceView> {
  if (!cluster.isWorker) return Promise.resolve({ figures: mergeSnapshots([local, startTimeSnapshot()]) });
  listen();
  nextQuestion += 1;
  const id = nextQuestion;
  return new Promise((resolve, reject) => {
    const fail = (error: Error) => {
      questions.delete(id);
      clearTimeout(timer);
      reject(error);
    };
    const timer = setTimeout(() => fail(new InstanceViewTimeoutError()), VIEW_TIMEOUT_MS);
    questions.set(id, (view) => {
      questions.delete(id);
      clearTimeout(timer);
      resolve(view);
    });
    const question: MetricsMessage = { metrics: 'view?', id, figures: local };
    process.send?.(question, undefined, undefined, (error: Error | null) => {
      if (error) fail(error);
    });
  });
}

function listen(): void {
  if (listening) return;
  listening = true;
  process.on('message', (message: unknown) => {
    if (!isMetricsMessage(message)) return;
    if (message.metrics === 'figures?' && ownFigures !== undefined) {
      const answer: MetricsMessage = { metrics: 'figures', id: message.id, figures: ownFigures() };
      // A primary gone away asks nothing more: there is nobody to tell.
      process.send?.(answer, undefined, undefined, () => {});
    } else if (message.metrics === 'view') questions.get(message.id)?.(message.view);
  });
}

// ---- In the primary ----

/** A worker as the primary reaches it: node:cluster's `Worker` is one. */
export interface Peer {
  readonly id: number;
  send(message: MetricsMessage, callback: (error: Error | null) => void): boolean;
}

export interface InstanceFigures {
  /** `worker` listens: it is asked for its figures from now on. */
  join(worker: Peer): void;
  /** `worker` exited: its last figures are kept in every later sum. */
  leave(worker: Peer): void;
  /** Handles a worker's message; `false` when it is not one of the metrics' messages. */
  onMessage(worker: Peer, message: unknown): boolean;
}

export interface InstanceOptions {
  /** How long a worker gets to send its figures; `SNAPSHOT_TIMEOUT_MS` by default. */
  readonly timeoutMs?: number;
  /** The primary's own figures, added to every sum; its CPU time, memory and start time by default. */
  readonly own?: () => Snapshot;
}

/**
 * The primary's side (src/main.ts): the last figures of every live worker,
 * the sum of those that exited, and the questions waiting for answers.
 */
export function createInstanceFigures(log: Logger, options: InstanceOptions = {}): InstanceFigures {
  const timeoutMs = options.timeoutMs ?? SNAPSHOT_TIMEOUT_MS;
  const own = options.own ?? (() => mergeSnapshots([processSnapshot(), startTimeSnapshot()]));
  const live = new Map<number, Peer>();
  /** Each live worker's last figures: what stands in when it does not answer. */
  const last = new Map<number, Snapshot>();
  /** The counters and histograms of the workers that exited. */
  let gone = EMPTY_SNAPSHOT;
  /** The last view given: no later one is below it. */
  let shown = EMPTY_SNAPSHOT;
  let nextRound = 0;
  interface Round {
    readonly asker: Peer;
    readonly question: number;
    /** The workers asked that have not answered yet. */
    readonly waiting: Set<number>;
    readonly timer: NodeJS.Timeout;
  }
  const rounds = new Map<number, Round>();

  const finish = (id: number) => {
    const round = rounds.get(id);
    if (round === undefined) return;
    rounds.delete(id);
    clearTimeout(round.timer);
    if (round.waiting.size > 0)
      log.warn('metrics: workers sent no figures in time; their last ones stand in', {
        workers: [...round.waiting],
        timeoutMs,
      });
    // Always in the same order (the exited, then the live by id), so that sums repeat exactly.
    const ids = [...last.keys()].sort((a, b) => a - b);
    shown = atLeast(shown, mergeSnapshots([gone, ...ids.map((i) => last.get(i) as Snapshot), own()]));
    const view: InstanceView = { figures: shown, workers: last.size, stale: round.waiting.size };
    round.asker.send({ metrics: 'view', id: round.question, view }, () => {});
  };
  const answered = (id: number, worker: number) => {
    const round = rounds.get(id);
    if (round === undefined) return;
    round.waiting.delete(worker);
    if (round.waiting.size === 0) finish(id);
  };

  return {
    join(worker) {
      live.set(worker.id, worker);
    },
    leave(worker) {
      live.delete(worker.id);
      const final = last.get(worker.id);
      if (final !== undefined) gone = mergeSnapshots([gone, retired(final)]);
      last.delete(worker.id);
      for (const [id, round] of rounds) {
        if (round.asker !== worker) answered(id, worker.id);
        else {
          rounds.delete(id);
          clearTimeout(round.timer);
        }
      }
    },
    onMessage(worker, message) {
      if (!isMetricsMessage(message)) return false;
      if ((message.metrics === 'view?' || message.metrics === 'figures') && live.has(worker.id))
        last.set(worker.id, message.figures);
      if (message.metrics === 'figures') answered(message.id, worker.id);
      if (message.metrics !== 'view?') return true;
      nextRound += 1;
      const id = nextRound;
      const others = [...live.values()].filter((w) => w.id !== worker.id);
      const round: Round = {
        asker: worker,
        question: message.id,
        waiting: new Set(others.map((w) => w.id)),
        timer: setTimeout(() => finish(id), timeoutMs),
      };
      rounds.set(id, round);
      for (const other of others) {
        // A worker whose channel closed cannot answer: wait no longer for it.
        other.send({ metrics: 'figures?', id }, (error) => {
          if (error) answered(id, other.id);
        });
      }
      if (round.waiting.size === 0) finish(id);
      return true;
    },
  };
}

function isMetricsMessage(message: unknown): message is MetricsMessage {
  if (typeof message !== 'object' || message === null) return false;
  const { metrics, id } = message as { metrics?: unknown; id?: unknown };
  return typeof metrics === 'string' && typeof id === 'number';
}
