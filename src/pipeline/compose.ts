/** Stages and how they run (as Hono's `compose.ts`): what runs before `await next()` goes inward, after it outward. */

/** Runs the stages inside; a stage hands on the state it was given (the chain is built once, not per request). */
export type Next<S, R = Response> = (state: S) => Promise<R>;

/** A stage: `R` is a `Response`, or an `Answer` with the decisions outer stages report. */
export type Stage<S, R = Response> = (state: S, next: Next<S, R>) => Promise<R>;

/**
 * `run(state)` as a promise, a synchronous throw as its rejection: for a stage written without `async` that waits on
 * what it calls (`next`, an inner chain) and must see every failure of it in one place.
 */
export function attempt<S, R>(run: (state: S) => Promise<R>, state: S): Promise<R> {
  try {
    return run(state);
  } catch (error) {
    return Promise.reject(error);
  }
}

/** A stage that does nothing: where a rule is off (no CORS origins, no rate limit). compose() leaves it out. */
export function pass<S, R = Response>(): Stage<S, R> {
  return PASS as unknown as Stage<S, R>;
}
const PASS: Stage<unknown, unknown> = (state, next) => next(state);

/** What compose() needs of a request's state: the stage it is in, written as each starts, checked on `next()`. */
export interface Passage {
  stage: number;
}

// Each compose() numbers its stages apart from every other's (the pipeline nests one inside another), in blocks
// of SPAN; a request's `stage` then equals a stage's number only while that stage is the innermost one running.
const SPAN = 64;
let composed = 0;

/**
 * One function running `stages` in order, `pass()` stages left out. The last answers without `next()`, and a
 * stage calls `next()` at most once: either mistake is thrown, found from the state rather than a closure per
 * request.
 */
export function compose<S extends Passage, R = Response>(stages: readonly Stage<S, R>[]): (state: S) => Promise<R> {
  if (stages.length === 0) throw new TypeError('compose() needs at least one stage');
  const kept = stages.filter((stage, i) => stage !== (PASS as unknown) || i === stages.length - 1);
  if (kept.length > SPAN) throw new TypeError(`compose() takes at most ${SPAN} stages`);
  composed = (composed + 1) % 2 ** 20;
  const first = composed * SPAN;
  let next: Next<S, R> = () => Promise.reject(new Error('the last stage called next(): it must answer'));
  for (let i = kept.length - 1; i > 0; i -= 1) next = checked(kept[i] as Stage<S, R>, first + i, next);
  const outer = kept[0] as Stage<S, R>;
  const inner = next;
  return (state) => {
    state.stage = first;
    return outer(state, inner);
  };
}

/** Stage number `at` of a chain: run only from the stage before it (`at - 1`), and only once. */
function checked<S extends Passage, R>(stage: Stage<S, R>, at: number, next: Next<S, R>): Next<S, R> {
  return (state) => {
    if (state.stage !== at - 1) return Promise.reject(new Error('a stage called next() twice: it must call it once'));
    state.stage = at;
    return stage(state, next);
  };
}
