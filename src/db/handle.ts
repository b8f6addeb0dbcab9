/**
 * What a handle on the database is (database.ts opens the pool, handles.ts
 * makes the handles): the statements it runs by name, its transactions, and
 * the error of a handle used while its own transaction is open.
 */
import type { BatchedRead, BatchParam } from './batch.ts';
import type { PoolUsage } from './pool-usage.ts';
import type { Statements } from './statements.generated.ts';

export type Param = string | number | boolean | null | Date | Uint8Array | readonly string[];

/** A statement of sql/queries/, by its name; its parameters and row are as PostgreSQL describes them. */
export type StatementName = keyof Statements;
/** The statements of result kind `Kind` run by their name alone (`Composed`: those with fragments to fill). */
export type NamesOf<Kind extends string, Composed extends boolean = false> = {
  [N in StatementName]: Statements[N]['kind'] extends Kind
    ? Statements[N]['composed'] extends Composed
      ? N
      : never
    : never;
}[StatementName];
export type RowOf<N extends StatementName> = Statements[N]['row'];
/** A statement's parameters, by name and type; left out for one that has none. */
type Args<N extends StatementName> = Statements[N]['params'] extends readonly []
  ? [params?: readonly []]
  : [params: Statements[N]['params']];

/**
 * A handle on the database: the pool, or one transaction (or savepoint) of
 * it. Statements run on the handle they are called on, and `begin()` hands
 * its callback a handle bound to the new transaction, as the `postgres`
 * driver's own `sql.begin((sql) => …)` does. There is no transaction
 * argument to forget: while a handle's transaction is open, the handle
 * itself refuses statements (`TransactionOpenError`), so work that reaches
 * for the outer handle fails at once rather than running outside the
 * transaction (and, on the embedded database's single connection, waiting
 * for it forever). Each method takes the statements of its kind, typed by
 * statements.generated.ts.
 */
export interface Db {
  /** The row of a `:one`, or of an `:opt` the caller knows is there: no row is an error (a bug), as are two. */
  one<N extends NamesOf<'one' | 'opt'>>(name: N, ...params: Args<N>): Promise<RowOf<N>>;
  /** The row of an `:opt` statement, or `undefined` when it found none. */
  opt<N extends NamesOf<'opt'>>(name: N, ...params: Args<N>): Promise<RowOf<N> | undefined>;
  /**
   * The row of a read by key (`read.single`, `:opt`), or `undefined`: on the pool, gathered with the same
   * read of other requests this turn into one statement (`read.batch`, src/db/batch.ts); in a transaction,
   * `read.single` alone.
   */
  batched<N extends NamesOf<'opt'>>(read: BatchedRead<N>, params: readonly BatchParam[]): Promise<RowOf<N> | undefined>;
  many<N extends NamesOf<'many'>>(name: N, ...params: Args<N>): Promise<RowOf<N>[]>;
  /** Runs an `:exec` statement and returns the number of rows it touched. */
  exec<N extends NamesOf<'exec'>>(name: N, ...params: Args<N>): Promise<number>;
  /**
   * Runs a `:many` statement, or a `:one` (at most one row), whose `{{name}}` placeholders are filled with
   * `fragments`. Fragments must come from fixed whitelists (sort orders,
   * optional filters), never from a request: values travel in `params`.
   */
  composed<N extends NamesOf<'many' | 'one', true>>(
    name: N,
    fragments: Readonly<Record<string, string>>,
    params?: readonly Param[],
  ): Promise<RowOf<N>[]>;
  /**
   * Runs `work` in a transaction and hands it the handle bound to it: on
   * the pool, a new transaction, which commits when `work` resolves and
   * rolls back when it throws; on a transaction's handle, that same
   * transaction (a write that may run alone or within a larger one, such
   * as an idempotent request's, commits with the larger one).
   */
  begin<T>(work: (db: Tx) => Promise<T>): Promise<T>;
  /** What the pool is doing now (GET /metrics). */
  readonly pool: PoolUsage;
}

/**
 * A handle bound to a transaction (or a savepoint): what a write that must commit with others takes, such as an event.
 */
/** Only in types: what makes a `Tx` more than a `Db`, so that the pool's handle is never taken for one. */
export declare const bound: unique symbol;

export interface Tx extends Db {
  readonly [bound]: true;
  /**
   * Runs `work` in a savepoint of this transaction: when it throws, only
   * its own work is rolled back, and the transaction goes on.
   */
  savepoint<T>(work: (db: Tx) => Promise<T>): Promise<T>;
}

/** A statement called on a handle whose transaction is open: it belongs on the handle `begin()` handed over. */
export class TransactionOpenError extends Error {
  override name = 'TransactionOpenError';
  constructor(statement: string) {
    super(`${statement} ran on a handle whose transaction is open; use the handle begin() handed to its callback`);
  }
}
