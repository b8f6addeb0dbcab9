/** The migration runner (contract §12) on the database of this run. */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openDatabase, type Database } from '../../src/db/database.ts';
import { migrate, MigrationError, MIGRATIONS_DIR, readMigrations } from '../../src/db/migrate.ts';
import { createTestDatabase, REAL_SERVER_URL, TEST_PREPARE, type TestDatabase } from '../support/database.ts';

let database: TestDatabase;
let db: Database;
let dir: string;

before(async () => {
  database = await createTestDatabase();
  db = await openDatabase({ databaseUrl: database.url, dataDir: '', poolMax: 4, prepare: TEST_PREPARE });
  dir = mkdtempSync(join(tmpdir(), 'orders-migrations-'));
  cpSync(MIGRATIONS_DIR, dir, { recursive: true });
});

after(async () => {
  await db.close();
  await database.drop();
  rmSync(dir, { recursive: true, force: true });
});

const applied = async () =>
  db.sql<
    { version: string; name: string; checksum: string }[]
  >`SELECT version, name, checksum FROM schema_migrations ORDER BY version`;

describe('migrate()', () => {
  it('applies every migration in order on an empty database and records its checksum', async () => {
    const files = readMigrations(dir);
    assert.deepEqual(
      await migrate(db, files),
      files.map((m) => m.name),
    );
    assert.deepEqual(
      [...(await applied())],
      files.map((m) => ({ version: m.version, name: m.name, checksum: m.checksum })),
    );
    const tables = await db.sql<
      { t: string }[]
    >`SELECT table_name AS t FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`;
    assert.deepEqual(
      tables.map((r) => r.t),
      [
        'api_tokens',
        'events',
        'idempotency_keys',
        'order_items',
        'orders',
        'payments',
        'products',
        'schema_migrations',
        'service_keys',
        'users',
        'webhook_attempts',
        'webhook_deliveries',
        'webhook_endpoints',
      ],
    );
  });

  it('applies nothing the second time', async () => {
    assert.deepEqual(await migrate(db, readMigrations(dir)), []);
  });

  it('applies only a new file', async () => {
    writeFileSync(join(dir, '9001_add_note.sql'), 'CREATE TABLE migration_probe (id int PRIMARY KEY);\n');
    assert.deepEqual(await migrate(db, readMigrations(dir)), ['9001_add_note.sql']);
    assert.equal((await applied()).length, readMigrations(MIGRATIONS_DIR).length + 1);
  });

  it('rolls a failing migration back whole and records nothing', async () => {
    writeFileSync(join(dir, '9002_broken.sql'), 'CREATE TABLE half_done (id int);\nSELECT * FROM no_such_table;\n');
    await assert.rejects(migrate(db, readMigrations(dir)), (error: unknown) => {
      assert.ok(error instanceof MigrationError);
      assert.match(error.message, /^migration 9002_broken\.sql failed: relation "no_such_table" does not exist$/);
      return true;
    });
    const [exists] = await db.sql<{ t: string | null }[]>`SELECT to_regclass('half_done')::text AS t`;
    assert.equal(exists?.t, null);
    assert.equal(
      (await applied()).some((m) => m.version === '9002'),
      false,
    );
    rmSync(join(dir, '9002_broken.sql'));
  });

  it('refuses to start when an applied migration was edited, and changes nothing', async () => {
    const file = join(dir, '9001_add_note.sql');
    writeFileSync(file, `${readFileSync(file, 'utf8')}-- an innocent-looking comment\n`);
    writeFileSync(join(dir, '9003_later.sql'), 'CREATE TABLE later_probe (id int);\n');
    const before = [...(await applied())];
    await assert.rejects(migrate(db, readMigrations(dir)), (error: unknown) => {
      assert.ok(error instanceof MigrationError);
      assert.match(
        error.message,
        new RegExp(
          String.raw`^migration 9001_add_note\.sql was changed after it was applied \(applied as 9001_add_note\.sql ` +
            String.raw`with checksum [0-9a-f]{12}…, the file now has [0-9a-f]{12}…\); ` +
            'restore it and put the change in a new migration$',
        ),
      );
      return true;
    });
    assert.deepEqual([...(await applied())], before);
    const [later] = await db.sql<{ t: string | null }[]>`SELECT to_regclass('later_probe')::text AS t`;
    assert.equal(later?.t, null);
  });
});

describe('readMigrations()', () => {
  it('refuses a misnamed file', () => {
    const bad = mkdtempSync(join(tmpdir(), 'orders-bad-'));
    writeFileSync(join(bad, '1_init.sql'), 'SELECT 1;');
    assert.throws(() => readMigrations(bad), /1_init\.sql: migration files are named NNNN_lowercase_words\.sql/);
    rmSync(bad, { recursive: true });
  });

  it('refuses two files with one number', () => {
    const bad = mkdtempSync(join(tmpdir(), 'orders-bad-'));
    writeFileSync(join(bad, '0001_a.sql'), 'SELECT 1;');
    writeFileSync(join(bad, '0001_b.sql'), 'SELECT 1;');
    assert.throws(() => readMigrations(bad), /two migrations are numbered 0001/);
    rmSync(bad, { recursive: true });
  });
});

describe('several servers starting at once', {
  skip: REAL_SERVER_URL ? false : 'needs a real PostgreSQL server (the embedded one serves one process)',
}, () => {
  it('apply each migration exactly once (three pools, as three processes would) and leave no lock', async () => {
    const fresh = await createTestDatabase();
    const pools = await Promise.all(
      [1, 2, 3].map(() => openDatabase({ databaseUrl: fresh.url, dataDir: '', poolMax: 2, prepare: TEST_PREPARE })),
    );
    try {
      const results = await Promise.all(pools.map((pool) => migrate(pool)));
      const names = readMigrations().map((m) => m.name);
      // Each file applied by one of them (whichever took the lock first for it), in order, none twice.
      assert.deepEqual(results.flat().sort(), [...names].sort());
      for (const result of results) assert.deepEqual(result, [...result].sort());
      const [count] = await pools[0]!.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM schema_migrations`;
      assert.equal(count?.n, names.length);
      // Transaction-level locks only: none is held once the runners are done.
      const [locks] = await pools[0]!.sql<{ n: number }[]>`
        SELECT count(*)::int AS n FROM pg_locks
        WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`;
      assert.equal(locks?.n, 0);
    } finally {
      await Promise.all(pools.map((pool) => pool.close()));
      await fresh.drop();
    }
  });
});
