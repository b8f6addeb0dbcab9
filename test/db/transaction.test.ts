/**
 * The service's own transactions (src/db/transaction.ts) on a fake reserved
 * connection that records what is sent and fails what a test says: what is
 * sent on each path, and that a connection is never given back inside a
 * transaction. test/db/handle.test.ts and the HTTP tests run them on both
 * databases.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Sql } from '../../src/db/connection.ts';
import { COMMIT_ROLLED_BACK, TERMINATE_OWN_BACKEND, transaction } from '../../src/db/transaction.ts';

/** A pool whose one reserved connection records each text sent, and fails the ones `fails` names (in order). */
function fakePool(fails: Record<string, Error[]> = {}, commitTag = 'COMMIT') {
  const sent: string[] = [];
  let released = 0;
  const reserved = {
    unsafe(text: string) {
      sent.push(text);
      const error = fails[text]?.shift();
      if (error !== undefined) return Promise.reject(error);
      return Promise.resolve(Object.assign([], { command: text === 'commit' ? commitTag : 'SELECT' }));
    },
    release() {
      released += 1;
    },
  };
  const sql = { reserve: async () => reserved } as unknown as Sql;
  return { sql, sent, released: () => released };
}

const cancelled = () => Object.assign(new Error('canceling statement due to user request'), { code: '57014' });

describe('transaction()', () => {
  it('sends begin, the work, commit, and gives the connection back', async () => {
    const pool = fakePool();
    const value = await transaction(pool.sql, async (tx) => {
      await tx.unsafe('SELECT 1');
      return 'done';
    });
    assert.deepEqual([value, pool.sent, pool.released()], ['done', ['begin', 'SELECT 1', 'commit'], 1]);
  });

  it('rolls back when the work fails, and throws its error', async () => {
    const pool = fakePool({ 'SELECT 1': [new Error('no')] });
    await assert.rejects(
      transaction(pool.sql, (tx) => tx.unsafe('SELECT 1')),
      /^Error: no$/,
    );
    assert.deepEqual([pool.sent, pool.released()], [['begin', 'SELECT 1', 'rollback'], 1]);
  });

  it('fails a transaction whose COMMIT was answered ROLLBACK', async () => {
    const pool = fakePool({}, 'ROLLBACK');
    await assert.rejects(
      transaction(pool.sql, async () => 1),
      (error: Error & { code?: string }) => error.code === COMMIT_ROLLED_BACK,
    );
  });

  it('sends a ROLLBACK that failed on an open connection once more, before giving the connection back', async () => {
    const first = cancelled();
    const pool = fakePool({ 'SELECT 1': [new Error('no')], rollback: [first] });
    await assert.rejects(
      transaction(pool.sql, (tx) => tx.unsafe('SELECT 1')),
      (error) => error === first,
    );
    assert.deepEqual([pool.sent, pool.released()], [['begin', 'SELECT 1', 'rollback', 'rollback'], 1]);
  });

  it('has the server end a connection it could not roll back, so that it is never reused mid-transaction', async () => {
    const pool = fakePool({ 'SELECT 1': [new Error('no')], rollback: [cancelled(), cancelled()] });
    await assert.rejects(transaction(pool.sql, (tx) => tx.unsafe('SELECT 1')));
    assert.deepEqual(pool.sent, ['begin', 'SELECT 1', 'rollback', 'rollback', TERMINATE_OWN_BACKEND]);
    assert.equal(pool.released(), 1);
  });

  it('rolls a failed savepoint back to its name, and the transaction goes on', async () => {
    const pool = fakePool({ 'SELECT 2': [new Error('inner')] });
    await transaction(pool.sql, async (tx) => {
      await assert.rejects(tx.savepoint((sp) => sp.unsafe('SELECT 2')));
      await tx.unsafe('SELECT 3');
    });
    assert.deepEqual(pool.sent, ['begin', 'savepoint "s0"', 'SELECT 2', 'rollback to "s0"', 'SELECT 3', 'commit']);
  });
});
