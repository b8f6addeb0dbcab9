/**
 * The service's own transactions (src/db/transaction.ts) on a fake reserved
 * connection that records what is sent and fails what a test says: what is
 * sent on each path, that a connection is never given back inside a
 * transaction, and that a request that gave up never begins or commits one
 * (contract §17). test/db/handle.test.ts, test/db/cancellation.test.ts and the
 * HTTP tests run them on both databases.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TransactionMark } from '../../src/db/cancellation.ts';
import type { Sql } from '../../src/db/connection.ts';
import { isConnectionFailure, isDatabaseUnavailable } from '../../src/db/errors.ts';
import {
  COMMIT_ROLLED_BACK,
  CommitLost,
  CONFLICT_ATTEMPTS,
  retryingConflicts,
  transaction,
  type TransactionGuard,
  type TransactionTexts,
} from '../../src/db/transaction.ts';

const TEXTS: TransactionTexts = { begin: 'begin; xid', commit: 'commit', rollback: 'rollback' };

/** A pool whose one reserved connection records each text sent, and fails the ones `fails` names (in order). */
function fakePool(fails: Record<string, Error[]> = {}, commitTag = 'COMMIT') {
  const sent: string[] = [];
  let released = 0;
  let terminated = 0;
  const reserved = {
    unsafe(text: string) {
      sent.push(text);
      const error = fails[text]?.shift();
      if (error !== undefined) return Promise.reject(error);
      if (text === TEXTS.begin) return Promise.resolve([[], [{ xid: 731 }]]);
      return Promise.resolve(Object.assign([], { command: text === 'commit' ? commitTag : 'SELECT' }));
    },
    release() {
      released += 1;
    },
    terminate() {
      terminated += 1;
    },
  };
  const sql = { reserve: async () => reserved } as unknown as Sql;
  return { sql, sent, released: () => released, terminated: () => terminated };
}

const cancelled = () => Object.assign(new Error('canceling statement due to user request'), { code: '57014' });
const lost = () => Object.assign(new Error('write CONNECTION_CLOSED'), { code: 'CONNECTION_CLOSED' });

/** A guard whose request gives up when `gaveUp()` says. */
function guard(gaveUp: () => boolean = () => false): TransactionGuard & { mark: TransactionMark } {
  return { abandoned: gaveUp, mark: { stage: 'waiting' } };
}

describe('transaction()', () => {
  it('sends begin, the work, commit, and gives the connection back', async () => {
    const pool = fakePool();
    const g = guard();
    const value = await transaction(
      pool.sql,
      async (tx) => {
        assert.equal(g.mark.stage, 'open');
        await tx.unsafe('SELECT 1');
        return 'done';
      },
      TEXTS,
      g,
    );
    assert.deepEqual(
      [value, pool.sent, pool.released(), g.mark.stage],
      ['done', ['begin; xid', 'SELECT 1', 'commit'], 1, 'committing'],
    );
  });

  it('rolls back when the work fails, and throws its error', async () => {
    const pool = fakePool({ 'SELECT 1': [new Error('no')] });
    await assert.rejects(
      transaction(pool.sql, (tx) => tx.unsafe('SELECT 1'), TEXTS),
      /^Error: no$/,
    );
    assert.deepEqual([pool.sent, pool.released(), pool.terminated()], [['begin; xid', 'SELECT 1', 'rollback'], 1, 0]);
  });

  it('fails a transaction whose COMMIT was answered ROLLBACK', async () => {
    const pool = fakePool({}, 'ROLLBACK');
    await assert.rejects(
      transaction(pool.sql, async () => 1, TEXTS),
      (error: Error & { code?: string }) => error.code === COMMIT_ROLLED_BACK,
    );
    assert.equal(pool.released(), 1);
  });

  it('closes a connection whose ROLLBACK failed, so that it is never reused inside a transaction', async () => {
    const first = cancelled();
    const pool = fakePool({ 'SELECT 1': [new Error('no')], rollback: [first] });
    await assert.rejects(
      transaction(pool.sql, (tx) => tx.unsafe('SELECT 1'), TEXTS),
      (error) => error === first,
    );
    assert.deepEqual([pool.sent, pool.terminated(), pool.released()], [['begin; xid', 'SELECT 1', 'rollback'], 1, 1]);
  });

  it('rolls back a COMMIT the server failed (a cancel, a deferred constraint), and throws its error', async () => {
    const failure = cancelled();
    const pool = fakePool({ commit: [failure] });
    await assert.rejects(
      transaction(pool.sql, async () => 1, TEXTS),
      (error) => error === failure,
    );
    assert.deepEqual([pool.sent, pool.terminated()], [['begin; xid', 'commit', 'rollback'], 0]);
  });

  it('closes the connection when the ROLLBACK after a failed COMMIT fails too', async () => {
    const pool = fakePool({ commit: [cancelled()], rollback: [cancelled()] });
    await assert.rejects(
      transaction(pool.sql, async () => 1, TEXTS),
      /canceling statement/,
    );
    assert.deepEqual([pool.sent, pool.terminated(), pool.released()], [['begin; xid', 'commit', 'rollback'], 1, 1]);
  });

  it('gives a COMMIT whose connection was lost as CommitLost, with the transaction id and the work value', async () => {
    const pool = fakePool({ commit: [lost()] });
    const failure = await transaction(pool.sql, async () => 'the value', TEXTS).then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(failure instanceof CommitLost);
    assert.deepEqual(
      [failure.xid, failure.value, (failure.cause as { code: string }).code],
      [731, 'the value', 'CONNECTION_CLOSED'],
    );
  });

  it('never begins a transaction whose request gave up while it waited for a connection', async () => {
    const pool = fakePool();
    let worked = false;
    const g = guard(() => true);
    await assert.rejects(
      transaction(
        pool.sql,
        async () => {
          worked = true;
        },
        TEXTS,
        g,
      ),
      { name: 'DeadlineExceeded' },
    );
    assert.deepEqual([pool.sent, worked, pool.released(), g.mark.stage], [[], false, 1, 'waiting']);
  });

  it('rolls back, and never commits, a transaction whose request gave up during its work', async () => {
    const pool = fakePool();
    let gaveUp = false;
    const g = guard(() => gaveUp);
    await assert.rejects(
      transaction(
        pool.sql,
        async (tx) => {
          await tx.unsafe('SELECT 1');
          gaveUp = true;
          return 'done';
        },
        TEXTS,
        g,
      ),
      { name: 'DeadlineExceeded' },
    );
    assert.deepEqual([pool.sent, g.mark.stage, pool.released()], [['begin; xid', 'SELECT 1', 'rollback'], 'open', 1]);
  });

  it('rolls a failed savepoint back to its name, and the transaction goes on', async () => {
    const pool = fakePool({ 'SELECT 2': [new Error('inner')] });
    await transaction(
      pool.sql,
      async (tx) => {
        await assert.rejects(tx.savepoint((sp) => sp.unsafe('SELECT 2')));
        await tx.unsafe('SELECT 3');
      },
      TEXTS,
    );
    assert.deepEqual(pool.sent, ['begin; xid', 'savepoint "s0"', 'SELECT 2', 'rollback to "s0"', 'SELECT 3', 'commit']);
  });
});

describe('retryingConflicts()', () => {
  const deadlock = () => Object.assign(new Error('deadlock detected'), { code: '40P01' });
  const serialization = () =>
    Object.assign(new Error('could not serialize access due to concurrent update'), { code: '40001' });
  /** An attempt that fails with `errors` in turn, then resolves with how many times it ran. */
  const failing = (...errors: Error[]) => {
    let runs = 0;
    const attempt = async () => {
      runs += 1;
      const error = errors.shift();
      if (error !== undefined) throw error;
      return runs;
    };
    return { attempt, runs: () => runs };
  };

  it('runs a transaction PostgreSQL rolled back for a deadlock or a serialization failure again', async () => {
    const { attempt } = failing(deadlock(), serialization());
    const g = guard();
    assert.equal(await retryingConflicts(attempt, g), 3);
    // Between attempts the transaction waits again: nothing of it is open.
    assert.equal(g.mark.stage, 'waiting');
  });

  it(`throws the last conflict after ${CONFLICT_ATTEMPTS} attempts: a 503 "not done", no lost connection`, async () => {
    const { attempt, runs } = failing(deadlock(), deadlock(), deadlock(), deadlock());
    const error = await retryingConflicts(attempt, guard()).catch((e: unknown) => e);
    assert.deepEqual([(error as { code?: unknown }).code, runs()], ['40P01', CONFLICT_ATTEMPTS]);
    assert.deepEqual([isDatabaseUnavailable(error), isConnectionFailure(error)], [true, false]);
    assert.deepEqual([isDatabaseUnavailable(serialization()), isConnectionFailure(serialization())], [true, false]);
  });

  it('never runs again after another failure, or once its request gave up', async () => {
    const unique = Object.assign(new Error('duplicate key'), { code: '23505' });
    const other = failing(unique);
    await assert.rejects(retryingConflicts(other.attempt, guard()), { code: '23505' });
    assert.equal(other.runs(), 1);
    const gaveUp = failing(deadlock());
    await assert.rejects(
      retryingConflicts(
        gaveUp.attempt,
        guard(() => true),
      ),
      { code: '40P01' },
    );
    assert.equal(gaveUp.runs(), 1);
  });
});
