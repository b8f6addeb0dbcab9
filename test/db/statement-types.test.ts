/**
 * The types of every named statement (src/db/statements.generated.ts) are what PostgreSQL says of the SQL today,
 * on both databases: generated again from the migrated schema, the file is the one committed. A statement or a
 * migration changed without `make statement-types` fails here; once generated again, the code that reads a
 * column that is no more, or takes a NULL it did not handle, fails `make typecheck`.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { openDatabase, type Database } from '../../src/db/database.ts';
import { migrate } from '../../src/db/migrate.ts';
import { generate, TYPES_FILE } from '../../scripts/statement-types.ts';
import { createTestDatabase, TEST_PREPARE, type TestDatabase } from '../support/database.ts';

let database: TestDatabase;
let db: Database;

before(async () => {
  database = await createTestDatabase();
  db = await openDatabase({ databaseUrl: database.url, dataDir: '', poolMax: 1, prepare: TEST_PREPARE });
  await migrate(db);
});
after(async () => {
  await db?.close(0);
  await database?.drop();
});

/** The generated text's entry for `name`. */
const entry = (text: string, name: string) => text.slice(text.indexOf(`  ${name}: {`)).split('\n  };')[0] ?? '';

describe('the statements’ types (src/db/statements.generated.ts)', () => {
  it('are what PostgreSQL describes of the statements today: make statement-types changes nothing', async () => {
    assert.equal(await generate(db.sql), readFileSync(TYPES_FILE, 'utf8'));
  });

  it('hold each parameter’s name and type, and each column’s, NULL where it can be', () => {
    const text = readFileSync(TYPES_FILE, 'utf8');
    assert.match(
      entry(text, 'GetOrder'),
      /kind: 'opt';\n {4}composed: false;\n {4}params: \[id: number \| string, owner: number \| string \| null\];/,
    );
    assert.match(entry(text, 'GetOrder'), /status: 'pending' \| 'paid' \| 'shipped' \| 'delivered' \| 'cancelled';/);
    assert.match(entry(text, 'GetOrder'), /total: string;/);
    // A table's column that may be NULL, and a computed one the header does not vouch for.
    assert.match(entry(text, 'ListDeliveries'), /next_attempt_at: Date;/);
    assert.match(entry(text, 'FindActiveToken'), /expires_at: Date \| null;/);
    assert.match(entry(text, 'ReplicaPosition'), /recovery: boolean;\n {6}replayed: string \| null;/);
  });

  it('follow the schema: a column made NULL-able changes them, a column renamed fails them', async () => {
    await db
      .transaction(async (tx) => {
        await tx.unsafe('ALTER TABLE users ALTER COLUMN name DROP NOT NULL');
        const changed = await generate(tx);
        assert.match(entry(changed, 'GetUser'), /name: string \| null;/);
        assert.notEqual(changed, readFileSync(TYPES_FILE, 'utf8'));
        await tx.unsafe('ALTER TABLE users RENAME COLUMN email TO address');
        await assert.rejects(generate(tx), /column "email" does not exist/);
        throw new Error('rolled back');
      })
      .catch((error: Error) => {
        if (error.message !== 'rolled back') throw error;
      });
    assert.equal(await generate(db.sql), readFileSync(TYPES_FILE, 'utf8'));
  });
});
