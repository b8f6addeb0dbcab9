/**
 * A collection's order (contract §4): the sort keys a query gives, the SQL
 * type of their values, and the order the database applies, which `id` always
 * ends. Pure.
 */

export interface SortKey<K extends string = string> {
  readonly key: K;
  readonly descending: boolean;
}

/**
 * The SQL type of a sort key's values: how a cursor's value (always text)
 * is checked before it reaches SQL, and what it is cast to there.
 */
export type KeyType = 'bigint' | 'numeric' | 'text' | 'timestamptz';

/**
 * The order a `sort` gives, as the database applies it: its keys up to `id`,
 * which always ends it (contract §4: appended in the direction of the last
 * key when not given; keys after it never decide anything).
 *
 * @example
 * sortOrder([{ key: 'total', descending: true }])
 * // [{ key: 'total', descending: true }, { key: 'id', descending: true }]
 */
export function sortOrder<K extends string>(sort: readonly SortKey<K>[]): SortKey<K | 'id'>[] {
  const id = sort.findIndex((k) => k.key === 'id');
  if (id >= 0) return sort.slice(0, id + 1);
  return [...sort, { key: 'id', descending: sort.at(-1)?.descending ?? false }];
}
