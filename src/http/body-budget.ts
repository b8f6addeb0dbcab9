/**
 * contract §11, bodies in flight: one budget of bytes for every request body
 * being read or handled at once in the process (`BODY_BUDGET_BYTES`), so that
 * however many clients send at once, their bodies hold at most that much.
 * Pure.
 */

/**
 * contract §11: the bytes that every body being read or handled at once may hold in the process
 * (`BODY_BUDGET_BYTES`). A body takes its share before its first byte is read (its declared length), or as it
 * grows (chunked), and gives it back when its request is answered.
 *
 * @example
 * const budget = createBodyBudget(10);
 * budget.take(8); // true
 * budget.take(4); // false: 12 would pass 10
 */
export interface BodyBudget {
  /** Takes `bytes`; `false`, and nothing taken, when they would pass the limit. */
  take(bytes: number): boolean;
  give(bytes: number): void;
  /** Bytes taken now (GET /metrics). */
  readonly held: number;
  readonly limit: number;
}

export function createBodyBudget(limit: number): BodyBudget {
  let held = 0;
  return {
    take(bytes) {
      if (held + bytes > limit) return false;
      held += bytes;
      return true;
    },
    give(bytes) {
      held -= bytes;
    },
    get held() {
      return held;
    },
    limit,
  };
}
