/** A collection's order (contract §4): the sort keys, their SQL types, and the order the database applies. Pure. */

export interface SortKey<K extends string = string> {
  readonly key: K;
  readonly descending: boolean;
}

/** The SQL type of a sort key's values: how a cursor's value (text) is checked, and what SQL casts it to. */
export type KeyType = 'bigint' | 'numeric' | 'text' | 'timestamptz';

/**
 * The order a `sort` gives, as the database applies it: `id` always ends it, appended in the direction of the last
 * key when not given; keys after `id` never decide anything and are dropped.
 */
export function sortOrder<K extends string>(sort: readonly SortKey<K>[]): SortKey<K | 'id'>[] {
  const id = sort.findIndex((k) => k.key === 'id');
  if (id >= 0) return sort.slice(0, id + 1);
  return [...sort, { key: 'id', descending: sort.at(-1)?.descending ?? false }];
}
