/**
 * A process's figures as plain data, and how the figures of several make one
 * view (contract §13): what a cluster worker sends its primary, what the
 * primary sums, what `GET /metrics` renders. A family's series are keyed by
 * their label text as the exposition writes it, so the rules below know no
 * family by name: a new counter is one more entry in a snapshot.
 *
 * - Counters and histograms are summed, bucket by bucket; a process that
 *   exited keeps its last figures in every later sum (`retired()`), so the
 *   sum never goes back when one dies.
 * - Gauges are summed over the processes alive now; an exited one's are dropped.
 */
import { family, labels, type MetricType, sample } from './exposition.ts';

/** A histogram series: counts per bucket (not cumulative; the last one is +Inf), their sum and count. */
export interface Histogram {
  readonly buckets: readonly number[];
  readonly sum: number;
  readonly count: number;
}

/** Series by family name, then by label text (`{route="/orders",method="GET"}`; `''` for none). */
export type Series<T> = Readonly<Record<string, Readonly<Record<string, T>>>>;

export interface Snapshot {
  readonly counters: Series<number>;
  readonly histograms: Series<Histogram>;
  readonly gauges: Series<number>;
}

export const EMPTY_SNAPSHOT: Snapshot = { counters: {}, histograms: {}, gauges: {} };

/** What a family's `# HELP` and `# TYPE` lines say; a histogram's bucket bounds (+Inf implied). */
export interface FamilyDoc {
  readonly name: string;
  readonly type: MetricType;
  readonly help: string;
  readonly buckets?: readonly number[];
}

/** The figures of all `snapshots` as one: every series summed, in the order they first appear. */
export function mergeSnapshots(snapshots: readonly Snapshot[]): Snapshot {
  const add = (a: number, b: number) => a + b;
  return {
    counters: mergeSeries(
      snapshots.map((s) => s.counters),
      add,
    ),
    histograms: mergeSeries(
      snapshots.map((s) => s.histograms),
      addHistograms,
    ),
    gauges: mergeSeries(
      snapshots.map((s) => s.gauges),
      add,
    ),
  };
}

/** What an exited process leaves to every later sum: its counters and histograms, not its gauges. */
export function retired(snapshot: Snapshot): Snapshot {
  return { counters: snapshot.counters, histograms: snapshot.histograms, gauges: {} };
}

/**
 * `next` with no counter or histogram figure below `previous`'s: a view
 * never goes back. Sums regrouped after a process exits can differ from the
 * last ones in the last bit of a floating-point figure (`_sum`, CPU seconds).
 */
export function atLeast(previous: Snapshot, next: Snapshot): Snapshot {
  return {
    counters: mergeSeries([previous.counters, next.counters], Math.max),
    histograms: mergeSeries([previous.histograms, next.histograms], (a, b) => ({
      buckets: a.buckets.map((count, i) => Math.max(count, b.buckets[i] ?? 0)),
      sum: Math.max(a.sum, b.sum),
      count: Math.max(a.count, b.count),
    })),
    gauges: next.gauges,
  };
}

/** The families of `docs` in the text exposition format, with `snapshot`'s series (or only their help and type). */
export function renderFamilies(snapshot: Snapshot, docs: readonly FamilyDoc[]): string {
  return docs
    .map((doc) => {
      if (doc.type === 'histogram') return family(doc.name, doc.type, doc.help, histogramSamples(snapshot, doc));
      const series = (doc.type === 'counter' ? snapshot.counters : snapshot.gauges)[doc.name] ?? {};
      const samples = Object.entries(series).map(([labelText, value]) => sample(doc.name, labelText, value));
      return family(doc.name, doc.type, doc.help, samples);
    })
    .join('');
}

function histogramSamples(snapshot: Snapshot, doc: FamilyDoc): string[] {
  const bounds = doc.buckets ?? [];
  const samples: string[] = [];
  for (const [labelText, histogram] of Object.entries(snapshot.histograms[doc.name] ?? {})) {
    let cumulative = 0;
    for (let i = 0; i <= bounds.length; i++) {
      cumulative += histogram.buckets[i] ?? 0;
      const le = labels({ le: i < bounds.length ? String(bounds[i]) : '+Inf' });
      // `{route="x"}` and `{le="1"}` make `{route="x",le="1"}`.
      const withLe = labelText === '' ? le : `${labelText.slice(0, -1)},${le.slice(1)}`;
      samples.push(sample(`${doc.name}_bucket`, withLe, cumulative));
    }
    samples.push(sample(`${doc.name}_sum`, labelText, histogram.sum));
    samples.push(sample(`${doc.name}_count`, labelText, histogram.count));
  }
  return samples;
}

function addHistograms(a: Histogram, b: Histogram): Histogram {
  const length = Math.max(a.buckets.length, b.buckets.length);
  return {
    buckets: Array.from({ length }, (_, i) => (a.buckets[i] ?? 0) + (b.buckets[i] ?? 0)),
    sum: a.sum + b.sum,
    count: a.count + b.count,
  };
}

function mergeSeries<T>(all: readonly Series<T>[], combine: (a: T, b: T) => T): Series<T> {
  const merged: Record<string, Record<string, T>> = {};
  for (const series of all) {
    for (const [name, values] of Object.entries(series)) {
      merged[name] ??= {};
      const into = merged[name];
      for (const [labelText, value] of Object.entries(values)) {
        const before = into[labelText];
        into[labelText] = before === undefined ? value : combine(before, value);
      }
    }
  }
  return merged;
}
