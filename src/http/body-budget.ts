/** Why `take()` refused: the whole budget is held (`budget`), or the client's share is (`share`). */
export type BudgetRefusal = 'budget' | 'share';

/**
 * contract §11: the bytes every body being read or handled at once may hold in the process (`BODY_BUDGET_BYTES`),
 * and each client (a principal, or an address group) at most `share`, so that one client never fills it for the
 * others. A body takes its share as its bytes arrive, and gives it back when its request is answered.
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
