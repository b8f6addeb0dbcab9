/** Suggestions for a mistyped command or option: the nearest candidate, when it is close. */

/** `; did you mean "…"?` when a candidate is close to `typed`, else nothing. */
export function didYouMean(typed: string, candidates: readonly string[]): string {
  const suggestion = nearest(candidates, () => typed);
  return suggestion === undefined ? '' : `; did you mean ${JSON.stringify(suggestion)}?`;
}

/**
 * The candidate nearest to what was typed (`typedFor(candidate)`), when within one edit or a `share`-th of its
 * length (`share` 3: a third). Ties go to the first candidate.
 */
export function nearest(
  candidates: readonly string[],
  typedFor: (candidate: string) => string,
  share = 3,
): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const distance = editDistance(typedFor(candidate), candidate);
    if (distance <= Math.max(1, Math.floor(candidate.length / share)) && distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours cost 1. */
function editDistance(a: string, b: string): number {
  // d[i][j]: the distance between the first i characters of a and the first j of b.
  const d = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = d[i] as number[];
      const previous = d[i - 1] as number[];
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min((previous[j] as number) + 1, (row[j - 1] as number) + 1, (previous[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        row[j] = Math.min(row[j] as number, ((d[i - 2] as number[])[j - 2] as number) + 1);
      }
    }
  }
  return (d[a.length] as number[])[b.length] as number;
}
