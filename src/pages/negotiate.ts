/**
 * Proactive negotiation among a fixed list of media types (RFC 9110
 * §12.5.1), for the pages outside the API versions (`/problems/<slug>`).
 * Pure. The API's own negotiation, with versions, is `http/negotiation.ts`,
 * whose `Accept` parser this shares.
 */
import { parseAccept } from '../http/negotiation.ts';

/**
 * The type of `offers` (given in the server's order of preference) that
 * `accept` (exactly what `headers.get('accept')` returns) prefers, or
 * `undefined` when it allows none of them (406). Each offer gets the `q` of
 * the most specific range that matches it (`q=0` excludes it); the highest
 * `q` wins, then the more specific match, then the server's order. Malformed
 * entries are skipped; no `Accept` at all means anything.
 *
 * @example
 * preferredType(null, ['text/html', 'application/json'])                       // 'text/html'
 * preferredType('application/json;q=0.9, text/*;q=0.5', ['text/html', 'application/json']) // 'application/json'
 * preferredType('image/png', ['text/html'])                                    // undefined
 */
export function preferredType(accept: string | null, offers: readonly string[]): string | undefined {
  const ranges = parseAccept(accept);
  let chosen: { type: string; q: number; specificity: number } | undefined;
  for (const type of offers) {
    const [main, sub] = type.split('/');
    let best: { q: number; specificity: number } | undefined;
    for (const range of ranges) {
      const matches = (range.type === '*' || range.type === main) && (range.subtype === '*' || range.subtype === sub);
      if (matches && (best === undefined || range.specificity > best.specificity)) best = range;
    }
    if (best === undefined || best.q <= 0) continue;
    // Strictly better only: on a tie the earlier offer (the server's preference) stays.
    if (chosen === undefined || best.q > chosen.q || (best.q === chosen.q && best.specificity > chosen.specificity)) {
      chosen = { type, q: best.q, specificity: best.specificity };
    }
  }
  return chosen?.type;
}
