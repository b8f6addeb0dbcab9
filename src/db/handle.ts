/** What a handle on the database is (handles.ts makes them): its statements by name, and its transactions. */
import type { BatchedRead, BatchParam } from './batch.ts';
import type { PoolUsage } from './pool-usage.ts';
import type { Statements } from './statements.generated.ts';

export type Param = string | number | boolean | null | Date | Uint8Array | readonly string[];

/** A statement of sql/queries/, by name. */
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
type Args<N extends StatementName> = Statements[N]['params'] extends readonly []
  ? [params?: readonly []]
  : [params: Statements[N]['params']];

/**
 * A handle on the database: the pool, or one transaction (or savepoint) of it. While a handle's transaction is
 * open the handle refuses statements (`TransactionOpenError`), so work that reaches for it fails at once rather
 * than running outside the transaction (or, on the embedded database's one connection, waiting for it forever).
 */
export interface Db {
  /** The row of a `:one`, or of an `:opt` the caller knows is there: no row is an error (a bug), as are two. */
  one<N extends NamesOf<'one' | 'opt'>>(name: N, ...params: Args<N>): Promise<RowOf<N>>;
  opt<N extends NamesOf<'opt'>>(name: N, ...params: Args<N>): Promise<RowOf<N> | undefined>;
  /** A read by key: on the pool, batched with the same read of other requests (batch.ts). */
  batched<N extends NamesOf<'opt'>>(read: BatchedRead<N>, params: readonly BatchParam[]): Promise<RowOf<N> | undefined>;
  many<N extends NamesOf<'many'>>(name: N, ...params: Args<N>): Promise<RowOf<N>[]>;
  exec<N extends NamesOf<'exec'>>(name: N, ...params: Args<N>): Promise<number>;
  /** Fills `{{name}}` placeholders with `fragments`, from fixed whitelists only, never from a request. */
  composed<N extends NamesOf<'many' | 'one', true>>(
    name: N,
    fragments: Readonly<Record<string, string>>,
    params?: readonly Param[],
  ): Promise<RowOf<N>[]>;
  /**
   * Runs `work` in a transaction: on the pool a new one, committed when `work` resolves; on a transaction's handle
   * that same one, so that a write that may run within a larger one (an idempotent request's) commits with it.
   */
  begin<T>(work: (db: Tx) => Promise<T>): Promise<T>;
  /** What the pool is doing now (GET /metrics). */
  readonly pool: PoolUsage;
}

/** Only in types: what makes a `Tx` more than a `Db`, so that the pool's handle is never taken for one. */
export declare const bound: unique symbol;

/** A handle bound to a transaction: what a write that must commit with others takes. */
export interface Tx extends Db {
  readonly [bound]: true;
  /** Runs `work` in a savepoint: when it throws, only its own work is rolled back. */
  savepoint<T>(work: (db: Tx) => Promise<T>): Promise<T>;
}

/** A statement called on a handle whose transaction is open: it belongs on the handle `begin()` handed over. */
export class TransactionOpenError extends Error {
  override name = 'TransactionOpenError';
  constructor(statement: string) {
    super(`${statement} ran on a handle whose transaction is open; use the handle begin() handed to its callback`);
  }
}
