import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadStatements, parseStatements, StatementError } from '../src/db/statements.ts';
import { QUERIES_DIR } from '../src/db/database.ts';

describe('parseStatements()', () => {
  it('splits a file at its name headers, keeping comments inside a statement', () => {
    const source =
      '-- a file comment\n\n-- name: GetA :one\n-- why\nSELECT 1;\n\n-- name: ListB :many\nSELECT 2\nFROM b;\n';
    assert.deepEqual(parseStatements(source, 'x.sql'), [
      { name: 'GetA', shape: 'one', text: '-- why\nSELECT 1', file: 'x.sql' },
      { name: 'ListB', shape: 'many', text: 'SELECT 2\nFROM b', file: 'x.sql' },
    ]);
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
