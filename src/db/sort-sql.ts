/**
 * A list's order in SQL (contract §4): `ORDER BY`, the keyset position a cursor carries, and a cursor page's
 * condition. Only the keys, their directions and fixed column maps choose the text; values travel as parameters.
 */
import type { Param } from './database.ts';

/** A sort key and its direction, as a parsed query gives it. */
export interface Sort<K extends string> {
  readonly key: K;
  readonly descending: boolean;
}

/**
 * The `ORDER BY` list for `sort`. `id` ends it as the tie-breaker, so pages never overlap, in the direction of the
 * last key, so that one index on (key, id), read forwards or backwards, delivers the whole order.
 */
export function orderBy<K extends string>(
  sort: readonly Sort<K>[],
  columns: Readonly<Record<K | 'id', string>>,
): string {
  const parts = sort.map((s) => `${columns[s.key]} ${s.descending ? 'DESC' : 'ASC'}`);
  if (!sort.some((s) => s.key === 'id')) parts.push(`${columns.id} ${sort.at(-1)?.descending ? 'DESC' : 'ASC'}`);
  return parts.join(', ');
}

/** The SQL type of a sort key's values. */
export type KeyType = 'bigint' | 'numeric' | 'text' | 'timestamptz';

/** A key of a list's order, `id` last, with the SQL type of its values. */
export interface OrderKey extends Sort<string> {
  readonly type: KeyType;
}

/**
 * A cursor's value is a text parameter cast to the key's type. A timestamptz parameter would be written by the
 * driver from a JavaScript Date, which drops the microseconds the keyset needs.
 */
const CAST: Readonly<Record<KeyType, string>> = {
  bigint: '::bigint',
  numeric: '::numeric',
  text: '::text',
  timestamptz: '::text::timestamptz',
};

/** A key's value as text that casts back to exactly that value (a timestamp in UTC, to the microsecond). */
const AS_TEXT: Readonly<Record<KeyType, (column: string) => string>> = {
  bigint: (c) => `${c}::text`,
  numeric: (c) => `${c}::text`,
  text: (c) => c,
  timestamptz: (c) => `to_char(${c} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`,
};

/** The row's keyset position (`sort_key`): a JSON array of each key's value as text, which `keyset()` casts back. */
export function sortKey(order: readonly OrderKey[], columns: Readonly<Record<string, string>>): string {
  return `json_build_array(${order.map((k) => AS_TEXT[k.type](column(columns, k.key))).join(', ')})`;
}

/**
 * The condition of the rows after position `after`, its values parameters from `$first`; `pinned` keys are left
 * out. Keys of one direction in a row compare as one row value, which a B-tree index reads as a range; where
 * directions change, later keys decide only among ties (the expanded OR form), and the first run also bounds the
 * range on its own so that an index still starts at the position. Every sort column is NOT NULL: a nullable one
 * would need its own NULL ordering here.
 *
 * @example
 * keyset([{ key: 'total', descending: true, type: 'numeric' }, { key: 'id', descending: false, type: 'bigint' }],
 *   { id: 'o.id', total: 'o.total' }, ['12.50', '7'], 3)
 * // { sql: 'o.total <= $3::numeric AND (o.total < $3::numeric OR (o.total = $3::numeric AND o.id > $4::bigint))',
 * //   params: ['12.50', '7'] }
 */
export function keyset(
  order: readonly OrderKey[],
  columns: Readonly<Record<string, string>>,
  after: readonly string[],
  first: number,
  pinned: readonly string[] = [],
): { sql: string; params: Param[] } {
  if (after.length !== order.length) throw new Error(`a keyset of ${order.length} keys needs as many values`);
  const keys = order.flatMap((k, i) => (pinned.includes(k.key) ? [] : [{ ...k, value: after[i] as string }]));
  const params = keys.map((k) => k.value);
  const parts = keys.map((k, i) => ({ column: column(columns, k.key), param: `$${first + i}${CAST[k.type]}` }));
  // Runs of keys in one direction, in order.
  const runs: { descending: boolean; parts: typeof parts }[] = [];
  for (const [i, key] of keys.entries()) {
    const run = runs.at(-1);
    if (run?.descending === key.descending) run.parts.push(parts[i]!);
    else runs.push({ descending: key.descending, parts: [parts[i]!] });
  }
  const compare = (run: (typeof runs)[number], strict: boolean) => {
    const op = `${run.descending ? '<' : '>'}${strict ? '' : '='}`;
    return run.parts.length === 1
      ? `${run.parts[0]!.column} ${op} ${run.parts[0]!.param}`
      : `(${run.parts.map((p) => p.column).join(', ')}) ${op} (${run.parts.map((p) => p.param).join(', ')})`;
  };
  const beyond = (r: number): string => {
    const run = runs[r]!;
    if (r === runs.length - 1) return compare(run, true);
    const equal = run.parts.map((p) => `${p.column} = ${p.param}`).join(' AND ');
    const rest = r + 1 === runs.length - 1 ? beyond(r + 1) : `(${beyond(r + 1)})`;
    return `${compare(run, true)} OR (${equal} AND ${rest})`;
  };
  if (runs.length === 0) return { sql: 'TRUE', params };
  if (runs.length === 1) return { sql: beyond(0), params };
  return { sql: `${compare(runs[0]!, false)} AND (${beyond(0)})`, params };
}

function column(columns: Readonly<Record<string, string>>, key: string): string {
  const sql = columns[key];
  if (sql === undefined) throw new Error(`the sort key ${key} has no column`);
  return sql;
}
