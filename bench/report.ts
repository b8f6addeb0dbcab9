/**
 * What a bench run reports (contract §14): rows of several rounds reduced
 * to medians, the comparisons of the service with each peer (the median of
 * the rounds' ratios, both CPU times per request, latencies), the targets
 * as ratios with whether each is met, and the table printed from them.
 */
import type { LoadResult } from './processes.ts';

export interface Row extends LoadResult {
  ratioToCeiling?: number;
  /** Rows measured in rounds: each round's result; the row holds their medians. */
  rounds?: LoadResult[];
}

/** The service's scenario against one peer's route, from the same rounds. */
export interface Comparison {
  scenario: string;
  peer: string;
  /** The rows compared (keys of the report's `scenarios`). */
  serviceRow: string;
  peerRow: string;
  /** The median of the rounds' ratios (service req/s ÷ peer req/s), and each round's. */
  ratio: number;
  ratios: number[];
  cpuMsPerRequest: { service: number | null; peer: number | null };
  pgCpuMsPerRequest: { service: number | null; peer: number | null };
  p50: { service: number; peer: number };
  p99: { service: number; peer: number };
}

/** One target of contract §14: `value` against `bound`. */
export interface Goal {
  target: string;
  value: number;
  relation: '≥' | '≤';
  bound: number;
  unit: '×' | 'ms' | 'ms/req' | 'MB';
  met: boolean;
}

export const round3 = (n: number) => Math.round(n * 1000) / 1000;

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

const medianOf = (values: (number | null | undefined)[]): number | null => {
  const known = values.filter((v): v is number => typeof v === 'number');
  return known.length === 0 ? null : round3(median(known));
};

/** One row from several rounds: medians of the rates, latencies and CPU; sums of the counts. */
export function medianRow(rounds: LoadResult[]): Row {
  const statusCodes: Record<string, number> = {};
  for (const r of rounds)
    for (const [code, n] of Object.entries(r.statusCodes)) statusCodes[code] = (statusCodes[code] ?? 0) + n;
  return {
    rps: Math.round(median(rounds.map((r) => r.rps))),
    p50: median(rounds.map((r) => r.p50)),
    p99: median(rounds.map((r) => r.p99)),
    requests: rounds.reduce((n, r) => n + r.requests, 0),
    errors: rounds.reduce((n, r) => n + r.errors, 0),
    statusCodes,
    cpuMsPerRequest: medianOf(rounds.map((r) => r.cpuMsPerRequest)),
    pgCpuMsPerRequest: medianOf(rounds.map((r) => r.pgCpuMsPerRequest)),
    pgBackendsLost: rounds.reduce((n, r) => n + (r.pgBackendsLost ?? 0), 0),
    ...(rounds.length > 1 ? { rounds } : {}),
  };
}

/** Per round, `a`'s req/s over `b`'s, and their median: both measured back to back under the same load. */
export function ratioOfRounds(a: LoadResult[], b: LoadResult[]): { ratio: number; ratios: number[] } {
  const ratios = b.map((r, i) => round3((a[i] as LoadResult).rps / r.rps));
  return { ratio: round3(median(ratios)), ratios };
}

export function compare(
  scenario: string,
  peer: string,
  [serviceRow, service]: [string, Row],
  [peerRow, other]: [string, Row],
): Comparison {
  return {
    scenario,
    peer,
    serviceRow,
    peerRow,
    ...ratioOfRounds(service.rounds ?? [service], other.rounds ?? [other]),
    cpuMsPerRequest: { service: service.cpuMsPerRequest, peer: other.cpuMsPerRequest },
    pgCpuMsPerRequest: { service: service.pgCpuMsPerRequest ?? null, peer: other.pgCpuMsPerRequest ?? null },
    p50: { service: service.p50, peer: other.p50 },
    p99: { service: service.p99, peer: other.p99 },
  };
}

const goal = (target: string, value: number, relation: Goal['relation'], bound: number, unit: Goal['unit']) => ({
  target,
  value,
  relation,
  bound,
  unit,
  met: relation === '≥' ? value >= bound : value <= bound,
});

/**
 * The targets of contract §14 from this run: scenario 1, 2 and 4 each ≥ 1.2
 * × every peer's route; scenario 2's p99 no higher than each peer's; the
 * 304 (scenario 3) ≥ 1.2 × each peer's GET (medians of the rounds' ratios)
 * and cheaper than the 200 (Node CPU per request under scenario 1's); peak
 * RSS ≤ 150 MB.
 */
export function goals(
  comparisons: Comparison[],
  the304: { peers: { peer: string; ratio: number }[]; cpu?: { of304: number; of200: number } },
  peakRssMb: number,
): Goal[] {
  const list: Goal[] = [];
  for (const c of comparisons) {
    list.push(goal(`scenario ${c.scenario} / ${c.peer}`, c.ratio, '≥', 1.2, '×'));
    if (c.scenario === '2') list.push(goal(`scenario 2 p99 against ${c.peer}'s`, c.p99.service, '≤', c.p99.peer, 'ms'));
  }
  for (const { peer, ratio } of the304.peers) list.push(goal(`304 (scenario 3) / ${peer}'s GET`, ratio, '≥', 1.2, '×'));
  if (the304.cpu !== undefined)
    list.push(goal('304 Node CPU against the 200', the304.cpu.of304, '≤', the304.cpu.of200, 'ms/req'));
  list.push(goal('server peak RSS', peakRssMb, '≤', 150, 'MB'));
  return list;
}

const ms = (n: number | null | undefined) => (typeof n === 'number' ? n.toFixed(3) : '–');

/** Lines of a table: the first column left-aligned, the others right-aligned. */
function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ');
  return [line(header), ...rows.map(line)];
}

/** The scenarios' table: one row per scenario and per peer route. */
export function scenarioTable(results: Record<string, Row>): string[] {
  return table(
    ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx/304', 'Node CPU ms/req', 'PG CPU ms/req', '× ceiling'],
    Object.entries(results).map(([name, r]) => [
      name,
      String(r.rps),
      r.p50.toFixed(1),
      r.p99.toFixed(1),
      String(r.errors),
      ms(r.cpuMsPerRequest),
      ms(r.pgCpuMsPerRequest),
      (r.ratioToCeiling ?? 1).toFixed(3),
    ]),
  );
}

/** The pairs' table: each ratio with its rounds, and service against peer for CPU and latency. */
export function comparisonTable(comparisons: Comparison[]): string[] {
  return table(
    ['service / peer', 'ratio', 'rounds', 'Node CPU ms/req', 'PG CPU ms/req', 'p50 ms', 'p99 ms'],
    comparisons.map((c) => [
      `scenario ${c.scenario} / ${c.peer}`,
      c.ratio.toFixed(3),
      c.ratios.map((r) => r.toFixed(2)).join(' '),
      `${ms(c.cpuMsPerRequest.service)} / ${ms(c.cpuMsPerRequest.peer)}`,
      `${ms(c.pgCpuMsPerRequest.service)} / ${ms(c.pgCpuMsPerRequest.peer)}`,
      `${c.p50.service.toFixed(1)} / ${c.p50.peer.toFixed(1)}`,
      `${c.p99.service.toFixed(1)} / ${c.p99.peer.toFixed(1)}`,
    ]),
  );
}

/** The targets, each with its value from this run and whether it is met. */
export function goalTable(list: Goal[]): string[] {
  const value = (n: number, unit: Goal['unit']) =>
    unit === '×' || unit === 'ms/req' ? `${n.toFixed(3)} ${unit}` : `${n.toFixed(1)} ${unit}`;
  return table(
    ['target (contract §14)', 'this run', 'needed', 'met'],
    list.map((g) => [
      g.target,
      value(g.value, g.unit),
      `${g.relation} ${value(g.bound, g.unit)}`,
      g.met ? 'yes' : 'NO',
    ]),
  );
}
