/**
 * Content negotiation and API versions (contract §8; RFC 9110 §12.5.1). A version comes from the path (`/v1`) or
 * the vendor type in `Accept`, else 1; the two must not disagree (a `/v1` path with only v2 acceptable is 406).
 */

export type Version = 1 | 2;

export const VENDOR_TYPES: Readonly<Record<Version, string>> = {
  1: 'application/vnd.orders.v1+json',
  2: 'application/vnd.orders.v2+json',
};
export const JSON_TYPE = 'application/json';

interface MediaRange {
  readonly type: string;
  readonly subtype: string;
  readonly q: number;
  /** 0 for `*\/*`, 1 for `type/*`, 2 for `type/subtype`, 3 with parameters. */
  readonly specificity: number;
  readonly index: number;
}

// RFC 9110 §5.6.2 token, and the weight of §12.4.2.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const QVALUE = /^(?:0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?)$/;

/** `Accept` as media ranges, malformed entries skipped (as jshttp/negotiator does); `null` or blank is anything. */
export function parseAccept(accept: string | null): MediaRange[] {
  if (accept === null || accept.trim() === '') return [{ type: '*', subtype: '*', q: 1, specificity: 0, index: 0 }];
  const ranges: MediaRange[] = [];
  accept.split(',').forEach((entry, index) => {
    const [range = '', ...params] = entry.split(';').map((p) => p.trim());
    const [type, subtype, extra] = range.toLowerCase().split('/');
    if (type === undefined || subtype === undefined || extra !== undefined || !TOKEN.test(type) || !TOKEN.test(subtype))
      return;
    if (type === '*' && subtype !== '*') return;
    let q = 1;
    let otherParams = 0;
    for (const param of params) {
      const [name = '', value = ''] = param.split('=').map((p) => p.trim());
      if (name.toLowerCase() === 'q') {
        if (!QVALUE.test(value)) return;
        q = Number(value);
      } else if (name !== '') {
        otherParams += 1;
      }
    }
    const specificity = type === '*' ? 0 : subtype === '*' ? 1 : otherParams > 0 ? 3 : 2;
    ranges.push({ type, subtype, q, specificity, index });
  });
  return ranges;
}

/** The weight of the most specific range matching `offer` (RFC 9110 §12.5.1), 0 when none does. */
function quality(offer: string, ranges: readonly MediaRange[]): { q: number; specificity: number } {
  const [type, subtype] = offer.split('/') as [string, string];
  let best: MediaRange | undefined;
  for (const range of ranges) {
    const matches = (range.type === '*' || range.type === type) && (range.subtype === '*' || range.subtype === subtype);
    if (matches && (best === undefined || range.specificity > best.specificity)) best = range;
  }
  return { q: best?.q ?? 0, specificity: best?.specificity ?? -1 };
}

export type Negotiated =
  | { readonly ok: true; readonly version: Version; readonly contentType: string }
  | { readonly ok: false; readonly detail: string };

/** The version and `Content-Type` of the response, or why nothing in `Accept` can be produced. */
export function negotiate(accept: string | null, pathVersion: Version | undefined): Negotiated {
  // Clients send few distinct Accept values: the verdict of each is kept.
  const key = accept === null ? `${pathVersion ?? 0}` : `${pathVersion ?? 0}:${accept}`;
  const known = verdicts.get(key);
  if (known !== undefined) return known;
  if (verdicts.size >= MAX_VERDICTS) verdicts.clear();
  const verdict = decide(accept, pathVersion);
  // A long Accept is parsed each time rather than held.
  if (key.length <= MAX_KEPT_ACCEPT) verdicts.set(key, verdict);
  return verdict;
}

/** Verdicts by path version and Accept value; cleared when full (a client sending ever new values gains nothing). */
const verdicts = new Map<string, Negotiated>();
const MAX_VERDICTS = 256;
const MAX_KEPT_ACCEPT = 256;

function decide(accept: string | null, pathVersion: Version | undefined): Negotiated {
  const ranges = parseAccept(accept);
  // Offers in the server's order, which breaks ties: plain JSON first (an unversioned client stays on v1).
  const offers: { type: string; version: Version }[] =
    pathVersion === undefined
      ? [
          { type: JSON_TYPE, version: 1 },
          { type: VENDOR_TYPES[2], version: 2 },
          { type: VENDOR_TYPES[1], version: 1 },
        ]
      : [
          { type: JSON_TYPE, version: pathVersion },
          { type: VENDOR_TYPES[pathVersion], version: pathVersion },
        ];
  let chosen: { type: string; version: Version; q: number; specificity: number } | undefined;
  for (const offer of offers) {
    const { q, specificity } = quality(offer.type, ranges);
    if (q <= 0) continue;
    if (chosen === undefined || q > chosen.q || (q === chosen.q && specificity > chosen.specificity))
      chosen = { ...offer, q, specificity };
  }
  if (chosen === undefined) {
    const offered = offers.map((o) => o.type).join(', ');
    return {
      ok: false,
      detail:
        ranges.length === 0
          ? `The Accept header has no valid media range; this resource is available as ${offered}.`
          : 'Nothing in Accept can be produced here' +
            `${pathVersion === undefined ? '' : ` (the path asks for version ${pathVersion})`}; ` +
            `this resource is available as ${offered}.`,
    };
  }
  return { ok: true, version: chosen.version, contentType: chosen.type };
}
