/**
 * contract §11, bodies in flight: one budget of bytes for every request body
 * being read or handled at once in the process (`BODY_BUDGET_BYTES`), so that
 * however many clients send at once, their bodies hold at most that much;
 * and a share of it for each client (a principal, or an address group for a
 * request without one), so that one client never fills it for the others.
 * Pure.
 */

/** Why `take()` refused: the whole budget is held (`budget`), or the client's share is (`share`). */
export type BudgetRefusal = 'budget' | 'share';

/**
 * contract §11: the bytes that every body being read or handled at once may hold in the process
 * (`BODY_BUDGET_BYTES`), and each client at most `share` of them. A body takes its share as its bytes arrive,
 * and gives it back when its request is answered.
 *
 * @example
 * const budget = createBodyBudget(10, 6);
 * budget.take(5, 'user:1'); // undefined: taken
 * budget.take(4, 'user:1'); // 'share': 9 would pass user 1's 6
 * budget.take(4, 'user:2'); // undefined
 * budget.take(4, 'user:3'); // 'budget': 13 would pass 10
 */
export interface BodyBudget {
  /** Takes `bytes` for client `owner`; a refusal, and nothing taken, when they would pass a limit. */
  take(bytes: number, owner: string): BudgetRefusal | undefined;
  give(bytes: number, owner: string): void;
  /** Bytes taken now (GET /metrics). */
  readonly held: number;
  readonly limit: number;
  /** The most one client may hold. */
  readonly share: number;
}

/** A client's share: an eighth of the budget, and at least one body of the largest size (`minimum`). */
export function shareOf(limit: number, minimum: number): number {
  return Math.min(limit, Math.max(minimum, Math.floor(limit / 8)));
}

export function createBodyBudget(limit: number, share = limit): BodyBudget {
  let held = 0;
  // Only the clients holding something: a client's entry goes with its last byte.
  const owners = new Map<string, number>();
  return {
    take(bytes, owner) {
      const mine = owners.get(owner) ?? 0;
      if (mine + bytes > share) return 'share';
      if (held + bytes > limit) return 'budget';
      held += bytes;
      owners.set(owner, mine + bytes);
      return undefined;
    },
    give(bytes, owner) {
      if (bytes === 0) return;
      held -= bytes;
      const left = (owners.get(owner) ?? bytes) - bytes;
      if (left <= 0) owners.delete(owner);
      else owners.set(owner, left);
    },
    get held() {
      return held;
    },
    limit,
    share,
  };
}
