/**
 * A handle of handles.ts on the pool or one of its transactions, for one request or none: one object per request,
 * its methods on the prototype, where nine closures were made for each.
 */
import type postgres from 'postgres';
import type { Sql } from './connection.ts';
import { type Param, TransactionOpenError, type Tx } from './handle.ts';
import type { PoolCounter } from './pool-usage.ts';
import type { RequestScope } from './cancellation.ts';
import type { ResultShape } from './statements.ts';
import type { TransactionSql } from './transaction.ts';
import type { BatchedRead, BatchParam, batches } from './batch.ts';

export type Queryable = Sql | TransactionSql;

/** Where a handle runs, and for which request (none for the pool's own handle). */
export interface Place {
  readonly on: Queryable;
  readonly scope: RequestScope | undefined;
}

/** What every handle of one pool shares: the closures of handles(). */
export interface Runner {
  readonly sql: Sql;
  readonly pool: PoolCounter['pool'];
  run(
    name: string,
    shape: ResultShape,
    params: readonly Param[],
    place: Place,
    fragments?: Readonly<Record<string, string>>,
  ): Promise<postgres.RowList<postgres.Row[]>>;
  admit(place: Place, gathered?: number): void;
  readonly gather: ReturnType<typeof batches>;
  transaction<T>(place: Place, inner: (tx: TransactionSql) => Promise<T>): Promise<T>;
}

type Inner<T> = (tx: TransactionSql) => Promise<T>;

/**
 * A handle on the pool or one of its transactions, for one request (`scope`) or none: one object, its methods on the
 * prototype. `guarded`: it refuses statements while its own transaction is open. Typed by statement name
 * (statements.generated.ts) where it is handed out: here, where the driver's rows come in, they are taken as that type.
 */
export class Handle implements Place {
  readonly #runner: Runner;
  readonly #guarded: boolean;
  #open = false;
  readonly on: Queryable;
  readonly scope: RequestScope | undefined;
  /** A field, not a getter: a test's wrapper made with `Object.create(handle)` reads it through its prototype. */
  readonly pool: PoolCounter['pool'];

  constructor(runner: Runner, on: Queryable, guarded: boolean, scope: RequestScope | undefined) {
    this.#runner = runner;
    this.pool = runner.pool;
    this.on = on;
    this.#guarded = guarded;
    this.scope = scope;
  }

  #ready(name: string): void {
    if (this.#open) throw new TransactionOpenError(name);
  }

  async one(name: string, params: readonly Param[] = []) {
    this.#ready(name);
    return (await this.#runner.run(name, 'one', params, this))[0];
  }

  async opt(name: string, params: readonly Param[] = []) {
    this.#ready(name);
    return (await this.#runner.run(name, 'opt', params, this))[0];
  }

  async many(name: string, params: readonly Param[] = []) {
    this.#ready(name);
    return [...(await this.#runner.run(name, 'many', params, this))];
  }

  // Not an async function: on the pool (a GET's read), the gathered read's promise is handed back as it is, with no
  // suspended frame held while it waits.
  batched(read: BatchedRead, params: readonly BatchParam[]): Promise<unknown> {
    const runner = this.#runner;
    try {
      this.#ready(read.single);
      if (this.on !== runner.sql) return runner.run(read.single, 'opt', params, this).then(first);
      runner.admit(this, runner.gather.gathered);
    } catch (error) {
      return Promise.reject(error);
    }
    return runner.gather(read, params, this.scope);
  }

  async composed(name: string, fragments: Readonly<Record<string, string>>, params: readonly Param[] = []) {
    this.#ready(name);
    return [...(await this.#runner.run(name, 'many', params, this, fragments))];
  }

  async exec(name: string, params: readonly Param[] = []) {
    this.#ready(name);
    return (await this.#runner.run(name, 'exec', params, this)).count;
  }

  begin<T>(work: (db: Tx) => Promise<T>): Promise<T> {
    // On a transaction, the same one; on the pool, a new one.
    const { on } = this;
    return this.#nested(work, (inner) => ('savepoint' in on ? inner(on) : this.#runner.transaction(this, inner)));
  }

  savepoint<T>(work: (db: Tx) => Promise<T>): Promise<T> {
    const { on } = this;
    if (!('savepoint' in on))
      return Promise.reject(new Error('savepoint() needs a transaction; on the pool, use begin()'));
    return this.#nested(work, (inner) => on.savepoint(inner));
  }

  async #nested<T>(work: (db: Tx) => Promise<T>, start: (inner: Inner<T>) => Promise<unknown>): Promise<T> {
    this.#ready('a transaction');
    if (this.#guarded) this.#open = true;
    try {
      return (await start((tx) => work(new Handle(this.#runner, tx, true, this.scope) as unknown as Tx))) as T;
    } finally {
      this.#open = false;
    }
  }
}

const first = (rows: readonly unknown[]): unknown => rows[0];
