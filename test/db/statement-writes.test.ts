/**
 * Whether a statement writes is declared in its header (`-- name: X :one
 * reads|writes`, contract §17), and the declaration is checked here against
 * PostgreSQL, on both databases: a statement declared `reads` names no
 * writing command or lock, calls no function the catalog says is volatile
 * (but the few listed below, which change nothing), and runs in a READ ONLY
 * transaction with NULL parameters without being refused for writing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDatabase, QUERIES_DIR, type Database } from '../../src/db/database.ts';
import { migrate } from '../../src/db/migrate.ts';
import { loadStatements, type Statement } from '../../src/db/statements.ts';
import { createTestDatabase, TEST_PREPARE, type TestDatabase } from '../support/database.ts';

/** Volatile functions that change nothing, each with why a read may call it. */
const VOLATILE_READS: Readonly<Record<string, string>> = {
  txid_status: 'reports what became of a transaction',
  pg_current_wal_lsn: 'reports the WAL position',
  pg_last_wal_replay_lsn: 'reports what a standby replayed',
  pg_is_in_recovery: 'reports whether the server is a standby',
  clock_timestamp: 'reads the clock',
  random: 'draws a number',
};

/** Commands and clauses that change data or take a lock: never in a statement declared `reads`. */
const WRITING =
  /\b(INSERT|UPDATE|DELETE|MERGE|TRUNCATE|CREATE|ALTER|DROP|LOCK|COPY|FOR\s+(NO\s+KEY\s+)?(UPDATE|(KEY\s+)?SHARE))\b/i;

/** `text` without its comments. */
const code = (text: string) => text.replace(/--[^\n]*/g, '');

/** The names `text` calls as functions (`name(`), lower-cased. */
const calls = (text: string) =>
  new Set([...code(text).matchAll(/\b([a-z_][a-z0-9_]*)\s*\(/gi)].map((m) => m[1]?.toLowerCase() as string));

/** The number of parameters (`$n`) of `text`. */
const parameterCount = (text: string) => Math.max(0, ...[...text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));

let database: TestDatabase;
let db: Database;
const statements = [...loadStatements(QUERIES_DIR).values()];
const reads = statements.filter((s) => !s.writes);

before(async () => {
  database = await createTestDatabase();
  db = await openDatabase({ databaseUrl: database.url, dataDir: '', poolMax: 1, prepare: TEST_PREPARE });
  await migrate(db);
});
after(async () => {
  await db.close(0);
  await database.drop();
});

describe('statements declared reads (contract §17: whether a statement writes is declared)', () => {
  it('declares both kinds: the writes of the service are declared so', () => {
    const writes = statements.filter((s) => s.writes).map((s) => s.name);
    for (const name of ['CreateOrder', 'CreateOrderKeyed', 'InsertEvent', 'ClaimIdempotencyKey', 'LockOrder'])
      assert.ok(writes.includes(name), `${name} must be declared writes`);
    assert.ok(reads.some((s) => s.name === 'GetOrderJson'));
  });

  it('name no command or clause that writes or locks', () => {
    const named = reads
      .filter((s) => WRITING.test(code(s.text)))
      .map((s) => `${s.name}: ${WRITING.exec(code(s.text))?.[0]}`);
    assert.deepEqual(named, []);
  });

  it('call no volatile function but the ones that change nothing', async () => {
    const volatile = new Set(
      (
        await db.sql.unsafe<{ name: string }[]>(
          "SELECT DISTINCT proname AS name FROM pg_proc WHERE provolatile = 'v' AND proname = ANY($1::text[])",
          [[...new Set(reads.flatMap((s) => [...calls(s.text)]))]],
        )
      ).map((r) => r.name),
    );
    const found = reads.flatMap((s) =>
      [...calls(s.text)]
        .filter((f) => volatile.has(f) && VOLATILE_READS[f] === undefined)
        .map((f) => `${s.name}: ${f}()`),
    );
    assert.deepEqual(found, []);
  });

  it('run in a READ ONLY transaction (NULL parameters) without being refused for writing', async () => {
    const refused: string[] = [];
    const plain = (s: Statement) => !s.text.includes('{{');
    await db.transaction(async (tx) => {
      await tx.unsafe('SET TRANSACTION READ ONLY');
      for (const statement of reads.filter(plain)) {
        await tx
          .savepoint(async (sp) => {
            const params = Array.from({ length: parameterCount(statement.text) }, () => null);
            try {
              await sp.unsafe(statement.text, params);
            } catch (error) {
              // 25006: read_only_sql_transaction. Any other failure (a NULL a statement cannot take) says nothing.
              if ((error as { code?: string }).code === '25006')
                refused.push(`${statement.name}: ${(error as Error).message}`);
            }
            throw new Error('rolled back to the savepoint: the next statement starts clean');
          })
          .catch((error: Error) => {
            if (!error.message.startsWith('rolled back to the savepoint')) throw error;
          });
      }
    });
    assert.deepEqual(refused, []);
    // The check can fail: a write is refused the same way.
    const write = statements.find((s) => s.name === 'InsertEvent') as Statement;
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.unsafe('SET TRANSACTION READ ONLY');
        await tx.unsafe(write.text, ['user.created', null, '{}']);
      }),
      { code: '25006' },
    );
  });
});
