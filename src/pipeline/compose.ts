/**
 * Stages and how they run, on the model of Hono's `compose.ts`: a stage is
 * `(state, next) => Promise<Response>`; what it does before `await next()`
 * runs on the way in, what it does after runs on the way out, in reverse
 * order. The list is fixed when the app is made (src/pipeline/pipeline.ts),
 * so no route can skip a rule.
 */

/**
 * Runs the stages after this one on `state` and gives what they hand back
 * (`R`: a `Response`, or an `Answer` with the decisions outer stages
 * report). A stage hands on the state it was given: the chain is built
 * once, so that a request allocates no closure per stage.
 */
export type Next<S, R = Response> = (state: S) => Promise<R>;

export type Stage<S, R = Response> = (state: S, next: Next<S, R>) => Promise<R>;

/** A stage that does nothing: where a rule is off (no CORS origins, no rate limit). compose() leaves it out. */
export function pass<S, R = Response>(): Stage<S, R> {
  return PASS as unknown as Stage<S, R>;
}
const PASS: Stage<unknown, unknown> = (state, next) => next(state);

/**
 * What compose() needs of a request's state: where the request is among the
 * stages, which it writes as each stage starts and checks on each `next()`.
 */
export interface Passage {
  stage: number;
}

// Each compose() numbers its stages apart from every other's (the pipeline nests one inside another), in blocks
// of SPAN; a request's `stage` then equals a stage's number only while that stage is the innermost one running.
const SPAN = 64;
let composed = 0;

/**
 * One function running `stages` in order on a request's state. The last
 * stage answers without calling `next()`; one that calls it anyway is a
 * programmer's mistake, thrown as such. A stage calls `next()` at most once
 * (a request passes each stage once): a second call is refused the same
 * way, as Hono's compose refuses it, by what the state says rather than a
 * closure per request. The chain of `next` functions is made here, once, from
 * the innermost stage out; a `pass()` stage is left out.
 *
 * @example
 * const run = compose<{ seen: string[]; stage: number }>([
 *   async (state, next) => { state.seen.push('outer'); return next(state); },
 *   async () => new Response('ok'),
 * ]);
 * await run({ seen: [], stage: 0 }); // the 200 'ok', after 'outer'
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
