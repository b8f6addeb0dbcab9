/** The entity tag of an order (src/orders/etag.ts, contract §9), and its representation's generation (format.ts). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { orderTag } from '../../src/orders/etag.ts';
import {
  definesOrderJson,
  essentialSql,
  generationOf,
  orderDefinition,
  orderFormat,
  SAMPLES,
} from '../../src/orders/format.ts';
import { readMigrations } from '../../src/db/migrate.ts';
import { orderRepresentation, type OrderRow } from '../../src/orders/representation.ts';

describe('orderTag()', () => {
  it('derives the tag from the id, the revision, the version and the media type', () => {
    const cases: [number, number, 1 | 2, string, string][] = [
      [42, 3, 1, 'application/json', '"o42r3v1.json.f1"'],
      [42, 3, 1, 'application/vnd.orders.v1+json', '"o42r3v1.vnd.f1"'],
      [42, 3, 2, 'application/json', '"o42r3v2.json.f1"'],
      [42, 3, 2, 'application/vnd.orders.v2+json', '"o42r3v2.vnd.f1"'],
      [42, 4, 1, 'application/json', '"o42r4v1.json.f1"'],
      [4, 23, 1, 'application/json', '"o4r23v1.json.f1"'],
      [9007199254740991, 9007199254740991, 2, 'application/json', '"o9007199254740991r9007199254740991v2.json.f1"'],
    ];
    for (const [id, revision, version, type, tag] of cases)
      assert.equal(orderTag(id, revision, version, type, '1'), tag);
    assert.equal(orderTag(42, 3, 1, 'application/json'), `"o42r3v1.json.f${orderFormat()}"`);
  });

  it('never gives two orders or two revisions one tag (the letters separate the numbers)', () => {
    assert.notEqual(orderTag(4, 23, 1, 'application/json'), orderTag(42, 3, 1, 'application/json'));
  });

  it('throws for a media type it has no code for: a programmer error, not a client one', () => {
    assert.throws(() => orderTag(1, 1, 1, 'text/html'), /no entity tag code for the media type text\/html/);
  });
});

describe('orderFormat()', () => {
  it("is the generation of the migrations that define the order's JSON functions and of the serializer", () => {
    assert.match(orderFormat(), /^[0-9a-z]{7}$/);
    assert.equal(orderFormat(), generationOf(orderDefinition()));
    const defining = readMigrations()
      .filter(definesOrderJson)
      .map((m) => m.name);
    assert.deepEqual(defining, [
      '0017_order_json.sql',
      '0018_order_items_json.sql',
      '0019_order_json_concatenated.sql',
    ]);
  });

  it('changes with any part of the definition, and not with an SQL comment or its layout', () => {
    const definition = orderDefinition();
    const changed = (i: number, text: string) => generationOf(definition.map((part, j) => (j === i ? text : part)));
    for (let i = 0; i < definition.length; i += 1) {
      assert.notEqual(changed(i, `${definition[i]} `), orderFormat(), `part ${i}`);
    }
    assert.equal(definition.length, 7, 'three migrations, two samples in two versions');
    assert.equal(essentialSql('SELECT a,  -- the id\n       b\nFROM t;'), 'SELECT a, b FROM t;');
  });

  it('follows a later migration that replaces a function, and refuses migrations that define none', () => {
    const migrations = readMigrations();
    const replacing = {
      version: '9999',
      name: '9999_x.sql',
      checksum: '',
      text: 'CREATE OR REPLACE FUNCTION order_json_v2(o orders) …',
    };
    assert.equal(orderDefinition([...migrations, replacing]).length, 8);
    const retyped = { ...replacing, text: 'ALTER TYPE money_v2 RENAME ATTRIBUTE amount TO value;' };
    assert.equal(orderDefinition([...migrations, retyped]).length, 8);
    assert.notEqual(generationOf(orderDefinition([...migrations, replacing])), orderFormat());
    assert.throws(() => orderDefinition(migrations.slice(0, 3)), /no migration defines order_json_v1 or order_json_v2/);
  });

  // What the serializer gives for a sample order (its generation changes when this does).
  it('stands for this output of orderRepresentation', () => {
    const row = SAMPLES[0] as OrderRow;
    assert.equal(
      JSON.stringify(orderRepresentation(row, 1)),
      '{"id":7,"customerId":3,"status":"pending","currency":"EUR","total":49.9,' +
        '"items":[{"id":11,"orderId":7,"productId":1,"qty":2,"unitPrice":12.5},' +
        '{"id":12,"orderId":7,"productId":2,"qty":1,"unitPrice":24.9}],' +
        '"createdAt":"2026-11-22T06:43:00.123Z","updatedAt":"2026-11-22T06:44:00.456Z"}',
    );
    assert.equal(
      JSON.stringify(orderRepresentation(row, 2)),
      '{"id":7,"customerId":3,"status":"pending","total":{"amount":"49.90","currency":"EUR"},' +
        '"items":[{"id":11,"orderId":7,"productId":1,"qty":2,"unitPrice":{"amount":"12.50","currency":"EUR"}},' +
        '{"id":12,"orderId":7,"productId":2,"qty":1,"unitPrice":{"amount":"24.90","currency":"EUR"}}],' +
        '"createdAt":"2026-11-22T06:43:00.123Z","updatedAt":"2026-11-22T06:44:00.456Z"}',
    );
  });
});
