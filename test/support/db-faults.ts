/**
 * Faults injected where the database meets the service, for tests only:
 * `startServer()`'s `database` option takes the database as the requests
 * see it, and these wrap it. The service's own types know nothing of them.
 */
import type { Database, Db, Param, Tx } from '../../src/db/database.ts';
import type { BatchedRead, BatchParam } from '../../src/db/batch.ts';
import type { RequestScope } from '../../src/db/cancellation.ts';

/**
 * The database whose request handles run `hook` each time the statement `name` has run (in a transaction or
 * not), before its result is handed back: a hook that throws fails the statement's caller, one that waits holds
 * its transaction open. The pool's own handle and everything else are the database's.
 */
export function afterStatement(name: string, hook: () => Promise<void> | void): (db: Database) => Database {
  return (db) => {
    const wrapped = Object.create(db) as Database & { handle(scope?: RequestScope): Db };
    wrapped.handle = (scope?: RequestScope) => around(db.handle(scope), name, hook);
    return wrapped;
  };
}

/** A handle as a test that wraps every statement sees it: names and rows untyped. */
export interface LooseDb {
  one(name: string, params?: readonly Param[]): Promise<unknown>;
  opt(name: string, params?: readonly Param[]): Promise<unknown>;
  batched(read: BatchedRead, params: readonly BatchParam[]): Promise<unknown>;
  many(name: string, params?: readonly Param[]): Promise<unknown[]>;
  exec(name: string, params?: readonly Param[]): Promise<number>;
  composed(name: string, fragments: Readonly<Record<string, string>>, params?: readonly Param[]): Promise<unknown[]>;
}

function around<T extends Db>(inner: T, name: string, hook: () => Promise<void> | void): T {
  const after = async <R>(statement: string, result: Promise<R>): Promise<R> => {
    const value = await result;
    if (statement === name) await hook();
    return value;
  };
  const wrapped = Object.create(inner) as T & { savepoint?: Tx['savepoint'] };
  // Any statement by any name: the hook wraps them all, whatever their types.
  const db = inner as unknown as LooseDb;
  Object.assign(wrapped, {
    one: (statement: string, params?: readonly Param[]) => after(statement, db.one(statement, params)),
    opt: (statement: string, params?: readonly Param[]) => after(statement, db.opt(statement, params)),
    batched: (read: BatchedRead, params: readonly BatchParam[]) => after(read.single, db.batched(read, params)),
    many: (statement: string, params?: readonly Param[]) => after(statement, db.many(statement, params)),
    exec: (statement: string, params?: readonly Param[]) => after(statement, db.exec(statement, params)),
    composed: (statement: string, fragments: Readonly<Record<string, string>>, params?: readonly Param[]) =>
      after(statement, db.composed(statement, fragments, params)),
    begin: <R>(work: (db: Tx) => Promise<R>) => inner.begin((tx) => work(around(tx, name, hook))),
  });
  if ('savepoint' in inner) {
    const tx = inner as unknown as Tx;
    wrapped.savepoint = <R>(work: (db: Tx) => Promise<R>) => tx.savepoint((sp) => work(around(sp, name, hook)));
  }
  return wrapped;
}
