/**
 * Stages and how they run, on the model of Hono's `compose.ts`: a stage is
 * `(state, next) => Promise<Response>`; what it does before `await next()`
 * runs on the way in, what it does after runs on the way out, in reverse
 * order. The list is fixed when the app is made (src/pipeline/pipeline.ts),
 * so no route can skip a rule.
 */

/** Runs the stages after this one and gives their response. */
export type Next = () => Promise<Response>;

export type Stage<S> = (state: S, next: Next) => Promise<Response>;

/** A stage that does nothing: where a rule is off (no CORS origins, no rate limit). */
export function pass<S>(): Stage<S> {
  return (_state, next) => next();
}

/**
 * One function running `stages` in order on a request's state. The last
 * stage answers without calling `next()`; one that calls it anyway is a
 * programmer's mistake, thrown as such. A stage may call `next()` again to
 * run the rest once more (the replica stage: a read that missed on the
 * replica runs again on the primary).
 *
 * @example
 * const run = compose<{ seen: string[] }>([
 *   async (state, next) => { state.seen.push('outer'); return next(); },
 *   async () => new Response('ok'),
 * ]);
 * await run({ seen: [] }); // the 200 'ok', after 'outer'
 */
export function compose<S>(stages: readonly Stage<S>[]): (state: S) => Promise<Response> {
  if (stages.length === 0) throw new TypeError('compose() needs at least one stage');
  const end: Next = () => Promise.reject(new Error('the last stage called next(): it must answer'));
  return (state) => {
    const run = (index: number): Promise<Response> => {
      const stage = stages[index] as Stage<S>;
      return index === stages.length - 1 ? stage(state, end) : stage(state, () => run(index + 1));
    };
    return run(0);
  };
}
