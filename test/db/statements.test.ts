import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadStatements, parseStatements, StatementError } from '../../src/db/statements.ts';
import { QUERIES_DIR } from '../../src/db/database.ts';

describe('parseStatements()', () => {
  it('splits a file at its name headers, keeping comments inside a statement', () => {
    const source =
      '-- a file comment\n\n-- name: GetA :one\n-- why\nSELECT 1;\n\n-- name: ListB :many\nSELECT 2\nFROM b;\n';
    assert.deepEqual(parseStatements(source, 'x.sql'), [
      { name: 'GetA', shape: 'one', text: '-- why\nSELECT 1', file: 'x.sql', writes: false },
      { name: 'ListB', shape: 'many', text: 'SELECT 2\nFROM b', file: 'x.sql', writes: false },
    ]);
  });

  it('marks a statement that may change data (contract §17: sent and not answered, it may have been done)', () => {
    const writes = (text: string) => parseStatements(`-- name: S :exec\n${text};`, 'x.sql')[0]?.writes;
    assert.equal(writes('INSERT INTO t VALUES (1)'), true);
    assert.equal(writes('WITH d AS (DELETE FROM t RETURNING id) SELECT count(*) FROM d'), true);
    assert.equal(writes('update t set a = 1'), true);
    assert.equal(writes('SELECT * FROM t FOR UPDATE'), true);
    assert.equal(writes('SELECT nextval($1)'), true);
    assert.equal(writes('SELECT id FROM updates -- an UPDATE in a comment\nWHERE a = 1'), false);
    assert.equal(writes('SELECT * FROM t'), false);
  });

  it('refuses SQL before the first header', () => {
    assert.throws(() => parseStatements('SELECT 1;\n-- name: A :one\nSELECT 2;', 'x.sql'), StatementError);
  });

  it('refuses an empty statement', () => {
    assert.throws(
      () => parseStatements('-- name: A :one\n\n-- name: B :one\nSELECT 1;', 'x.sql'),
      /statement A is empty/,
    );
  });
});

describe('loadStatements()', () => {
  it('loads every statement of sql/queries, each named once', () => {
    const statements = loadStatements(QUERIES_DIR);
    assert.ok(statements.has('GetProduct'));
    assert.ok(statements.has('FindActiveToken'));
    for (const statement of statements.values()) {
      assert.ok(!statement.text.includes('${'), `${statement.name} must not interpolate`);
    }
  });
});
