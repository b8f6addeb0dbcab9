import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadStatements, parseStatements, StatementError } from '../../src/db/statements.ts';
import { QUERIES_DIR } from '../../src/db/database.ts';

describe('parseStatements()', () => {
  it('splits a file at its name headers, keeping comments inside a statement', () => {
    const source =
      '-- a file comment\n\n-- name: GetA :one reads\n-- why\nSELECT 1;\n\n' +
      '-- name: PutB :many writes\nINSERT 2\nINTO b;\n';
    assert.deepEqual(parseStatements(source, 'x.sql'), [
      { name: 'GetA', shape: 'one', text: '-- why\nSELECT 1', file: 'x.sql', writes: false, params: [], notNull: [] },
      { name: 'PutB', shape: 'many', text: 'INSERT 2\nINTO b', file: 'x.sql', writes: true, params: [], notNull: [] },
    ]);
  });

  it('takes whether a statement writes from its header, never from its text (contract §17)', () => {
    const writes = (header: string) => parseStatements(`${header}\nSELECT f($1);`, 'x.sql')[0]?.writes;
    assert.equal(writes('-- name: S :one writes'), true);
    assert.equal(writes('-- name: S :one reads'), false);
  });

  it('refuses a header that does not say whether its statement writes, or says it wrong', () => {
    for (const header of ['-- name: A :one', '-- name: A :one write', '-- name: A reads', '-- name: A :exec reads x']) {
      assert.throws(
        () => parseStatements(`${header}\nSELECT 1;`, 'x.sql'),
        (error: Error) =>
          error instanceof StatementError &&
          error.message === `x.sql: "${header}" must be "-- name: Name :one|:opt|:many|:exec reads|writes"`,
      );
    }
  });

  it('names the parameters in order, over several lines, and the computed columns never NULL', () => {
    const [found] = parseStatements(
      '-- name: FindX :opt reads\n-- params: id,\n-- params: owner?\n-- not null: total, sort_key\nSELECT 1;',
      'x.sql',
    );
    assert.deepEqual(
      [found?.shape, found?.params, found?.notNull, found?.text],
      [
        'opt',
        [
          { name: 'id', nullable: false },
          { name: 'owner', nullable: true },
        ],
        ['total', 'sort_key'],
        'SELECT 1',
      ],
    );
  });

  it('refuses a parameter or column name it cannot take', () => {
    for (const line of [
      '-- params: Id',
      '-- params: id,, owner',
      '-- params: a-b',
      '-- not null: Total',
      '-- not null: ',
    ]) {
      assert.throws(
        () => parseStatements(`-- name: A :one reads\n${line}\nSELECT 1;`, 'x.sql'),
        (error: Error) => error.message === `x.sql: "${line.trim()}" lists a name it cannot take`,
        line,
      );
    }
  });

  it('refuses SQL before the first header', () => {
    assert.throws(() => parseStatements('SELECT 1;\n-- name: A :one reads\nSELECT 2;', 'x.sql'), StatementError);
  });

  it('refuses an empty statement', () => {
    assert.throws(
      () => parseStatements('-- name: A :one reads\n\n-- name: B :one reads\nSELECT 1;', 'x.sql'),
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
