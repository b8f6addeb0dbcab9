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
 * One function running `stages` in order on a request's state. The last
 * stage answers without calling `next()`; one that calls it anyway is a
 * programmer's mistake, thrown as such. A stage calls `next()` at most once:
 * a request passes each stage once. The chain of `next` functions is made
 * here, once, from the innermost stage out; a `pass()` stage is left out.
 *
 * @example
 * const run = compose<{ seen: string[] }>([
 *   async (state, next) => { state.seen.push('outer'); return next(state); },
 *   async () => new Response('ok'),
 * ]);
 * await run({ seen: [] }); // the 200 'ok', after 'outer'
 */
export function compose<S, R = Response>(stages: readonly Stage<S, R>[]): (state: S) => Promise<R> {
  if (stages.length === 0) throw new TypeError('compose() needs at least one stage');
  const end: Next<S, R> = () => Promise.reject(new Error('the last stage called next(): it must answer'));
  const last = stages[stages.length - 1] as Stage<S, R>;
  let run: Next<S, R> = (state) => last(state, end);
  for (let i = stages.length - 2; i >= 0; i -= 1) {
    const stage = stages[i] as Stage<S, R>;
    if (stage === (PASS as unknown)) continue;
    const next = run;
    run = (state) => stage(state, next);
  }
  return run;
}
