/**
 * The test harness of a primary and its streaming standby
 * (test/support/replica.ts), on real PostgreSQL processes: what the primary
 * commits reaches the standby, replay pauses and resumes, the standby stops
 * and starts, and `stop()` leaves nothing running.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import postgres from 'postgres';
import { REPLICA_MISSING, startReplicaPair, type ReplicaPair } from '../support/replica.ts';
import { until } from '../support/tools.ts';

/** Process `pid`'s state and parent, from /proc; undefined once it is gone. */
function processStat(pid: number): { state: string; parent: number } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (error) {
    // Gone before it was opened, or while it was read.
    if (['ENOENT', 'ESRCH'].includes((error as NodeJS.ErrnoException).code ?? '')) return undefined;
    throw error;
  }
  // "pid (name) state parent …": the name may hold spaces, so read after its closing parenthesis.
  const [state = '', parent] = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state, parent: Number(parent) };
}

/** Whether `pid` runs: an exited postmaster stays a zombie (Z) until whoever adopted it reaps it. */
const running = (pid: number) => ![undefined, 'Z'].includes(processStat(pid)?.state);

/** The processes whose parent is one of `parents` (a postmaster's are its server's processes). */
const childrenOf = (parents: readonly number[]) =>
  readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => parents.includes(processStat(pid)?.parent ?? 0));

describe('startReplicaPair()', { skip: REPLICA_MISSING }, () => {
  let pair: ReplicaPair;
  let primary: postgres.Sql;
  let standby: postgres.Sql;

  before(async () => {
    pair = await startReplicaPair();
    primary = postgres(pair.primaryUrl(), { max: 1, onnotice: () => {} });
    standby = postgres(pair.standbyUrl(), { max: 1, onnotice: () => {} });
  });
  after(async () => {
    await primary?.end();
    await standby?.end();
    await pair?.stop();
  });

  /** The rows of `statement`, as a plain array (a driver's result is an array of its own kind). */
  const rows = async <T>(statement: Promise<T[]>) => [...(await statement)];
  const notes = (on: postgres.Sql) => rows(on<{ note: string }[]>`SELECT note FROM notes ORDER BY id`);

  it('a table and rows committed on the primary are on the standby after caughtUp()', async () => {
    await primary`CREATE TABLE notes (id serial PRIMARY KEY, note text NOT NULL)`;
    await primary`INSERT INTO notes (note) VALUES ('one'), ('two')`;
    await pair.caughtUp();
    assert.deepEqual(await notes(standby), [{ note: 'one' }, { note: 'two' }]);
    assert.deepEqual(await rows(standby<{ recovery: boolean }[]>`SELECT pg_is_in_recovery() AS recovery`), [
      { recovery: true },
    ]);
  });

  it('with replay paused, a new row is received but not replayed; after resumeReplay() it is there', async () => {
    await pair.caughtUp();
    await pair.pauseReplay();
    await primary`INSERT INTO notes (note) VALUES ('three')`;
    const lsn = (await primary<{ lsn: string }[]>`SELECT pg_current_wal_lsn()::text AS lsn`)[0]?.lsn as string;
    // The standby has the new WAL: only its replay waits.
    await until(
      async () =>
        (await standby<{ received: boolean }[]>`SELECT pg_last_wal_receive_lsn() >= ${lsn}::pg_lsn AS received`)[0]
          ?.received === true,
      () => `the standby did not receive ${lsn}:\n${pair.log()}`,
    );
    const [behind] = await standby<{ behind: boolean; state: string }[]>`
      SELECT pg_last_wal_replay_lsn() < ${lsn}::pg_lsn AS behind, pg_get_wal_replay_pause_state() AS state`;
    assert.deepEqual(behind, { behind: true, state: 'paused' });
    assert.deepEqual(await notes(standby), [{ note: 'one' }, { note: 'two' }]);
    await pair.resumeReplay();
    await pair.caughtUp();
    assert.deepEqual(await notes(standby), [{ note: 'one' }, { note: 'two' }, { note: 'three' }]);
  });

  it('stopStandby(): the standby refuses connections; startStandby(): it streams and replays again', async () => {
    await standby.end();
    await pair.stopStandby();
    const probe = postgres(pair.standbyUrl(), { max: 1, onnotice: () => {} });
    await assert.rejects(probe`SELECT 1`, (error: { code?: string }) => {
      assert.equal(error.code, 'ECONNREFUSED');
      return true;
    });
    await probe.end();
    // Written while the standby was down: its replication slot keeps the WAL for it.
    await primary`INSERT INTO notes (note) VALUES ('four')`;
    await pair.startStandby();
    standby = postgres(pair.standbyUrl(), { max: 1, onnotice: () => {} });
    assert.deepEqual(await rows(standby<{ status: string }[]>`SELECT status FROM pg_stat_wal_receiver`), [
      { status: 'streaming' },
    ]);
    await pair.caughtUp();
    assert.deepEqual(await notes(standby), [{ note: 'one' }, { note: 'two' }, { note: 'three' }, { note: 'four' }]);
  });

  it('createDatabase() resolves once the standby has the database', async () => {
    await pair.createDatabase('orders_replica_check');
    const there = postgres(pair.standbyUrl('orders_replica_check'), { max: 1, onnotice: () => {} });
    try {
      assert.deepEqual(await rows(there<{ name: string }[]>`SELECT current_database() AS name`), [
        { name: 'orders_replica_check' },
      ]);
    } finally {
      await there.end();
    }
  });

  it('stop() ends both servers and every process of theirs, and removes the folder', async () => {
    const postmasters = pair.postmasters();
    assert.equal(postmasters.length, 2);
    const pids = [...postmasters, ...childrenOf(postmasters)];
    // Each server's checkpointer, writers… and the standby's startup and walreceiver, the primary's walsender.
    assert.ok(pids.length > 6, `${pids}`);
    await primary.end();
    await standby.end();
    await pair.stop();
    assert.deepEqual(pids.filter(running), []);
    assert.equal(existsSync(pair.dir), false);
  });
});
