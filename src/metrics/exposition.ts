/**
 * The Prometheus text exposition format, version 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/): one family
 * per block, `# HELP` and `# TYPE` first, then its samples, each line ended
 * by a line feed.
 */

export const EXPOSITION_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export type MetricType = 'counter' | 'gauge' | 'histogram';

/** A family's block: its help, type and sample lines. */
export function family(name: string, type: MetricType, help: string, samples: readonly string[]): string {
  // The format: in HELP, backslash and line feed are escaped.
  const text = help.replaceAll('\\', '\\\\').replaceAll('\n', '\\n');
  return `# HELP ${name} ${text}\n# TYPE ${name} ${type}\n${samples.join('')}`;
}

/** One sample line; `labelText` from `labels()` (may be empty). */
export function sample(name: string, labelText: string, value: number): string {
  return `${name}${labelText} ${formatValue(value)}\n`;
}

/** `{a="x",b="y"}`, each value escaped as the format wants; the empty string for no labels. */
export function labels(pairs: Readonly<Record<string, string>>): string {
  const parts = Object.entries(pairs).map(
    ([name, value]) => `${name}="${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n')}"`,
  );
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

/** A sample value as Go's `strconv.ParseFloat` reads it: `NaN`, `+Inf`, `-Inf`, or the number. */
export function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}
