/** withDeadline() (src/db/errors.ts): the bound on a request's wait for the database (contract §11). */
import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import { DeadlineExceeded, isDatabaseUnavailable, poolerHint, withDeadline } from '../../src/db/errors.ts';

describe('withDeadline()', () => {
  it('settles as the work does when it settles in time, and clears its timer', async () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      assert.equal(await withDeadline(Promise.resolve(42), 5_000), 42);
      await assert.rejects(withDeadline(Promise.reject(new Error('refused')), 5_000), /refused/);
      // Nothing is left to fire: ticking past the deadline changes nothing.
      mock.timers.tick(10_000);
    } finally {
      mock.timers.reset();
    }
  });

  it('rejects with DeadlineExceeded, counted as the database unavailable, once the work takes longer', async () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      let fail: (error: Error) => void = () => {};
      const work = new Promise<number>((_, reject) => (fail = reject));
      const bounded = withDeadline(work, 5_000);
      mock.timers.tick(4_999);
      let settled = false;
      void bounded.then(
        () => (settled = true),
        () => (settled = true),
      );
      await Promise.resolve();
      assert.equal(settled, false);
      mock.timers.tick(1);
      const error = await bounded.catch((e: unknown) => e);
      assert.ok(error instanceof DeadlineExceeded);
      assert.equal(isDatabaseUnavailable(error), true);
      // The abandoned work fails later: its request is answered, nothing is raised.
      fail(new Error('too late'));
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(unhandled, []);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      mock.timers.reset();
    }
  });
});

describe('poolerHint()', () => {
  const hint = 'a transaction-mode pooler (PgBouncer) between the service and PostgreSQL needs DB_PREPARE=off';
  const cases: [string, unknown, string | undefined][] = [
    ['a prepared statement the session does not know (26000)', { code: '26000', message: 'prepared…' }, hint],
    ["a pooler's refusal", { message: 'unsupported startup parameter: statement_timeout' }, hint],
    ['a unique violation', { code: '23505', message: 'duplicate key' }, undefined],
    ['a connection reset', { code: 'ECONNRESET' }, undefined],
    ['no object', 'text', undefined],
  ];
  for (const [name, error, expected] of cases) {
    it(`says ${expected === undefined ? 'nothing' : 'DB_PREPARE=off'} for ${name}`, () => {
      assert.equal(poolerHint(error), expected);
    });
  }
});
