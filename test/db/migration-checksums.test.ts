/**
 * A migration never changes once released: a database that applied it
 * records its checksum, and migrate() refuses to start when the file no
 * longer matches (test/db/migrations.test.ts). This pins the checksum of every
 * released migration, so that an edit (a reworded comment, a reformatting)
 * fails here rather than on an operator's database. A new migration adds its
 * row when it is released.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readMigrations } from '../../src/db/migrate.ts';

const RELEASED: readonly (readonly [string, string])[] = [
  ['0001_init.sql', 'b9710c86f24ad79216f06b36f3ab39be26021e51605e8eb49649b335db136986'],
  ['0002_orders.sql', '7031f83673f381b4d4ec71a6dc5d47942df4f4482e001e872569b950af893a09'],
  ['0003_payments_idempotency.sql', '1541ba54dc1f2bcfc387f441a7ca7e8c115a7c9b9c6e4a4338e5f8c4fc38b174'],
  ['0004_order_list_indexes.sql', '295e2dc8828dee534057679a2dbe644ed69454c2d65bdf1656c066b75de08fc4'],
  ['0005_events_webhooks.sql', '9f468a0578eba6438872715cde6e0715a205bb5040339a22ce8c7dc0b5e6e926'],
  ['0006_webhook_deliveries_endpoint_due.sql', 'c1fd65978b3d53b9a44faf0de6d8e6c7b901f86145b10d1abde0efd171e47f93'],
  ['0007_order_counts.sql', 'f3c1c20516a5d8d0c2aa6270f760daa2d7d8fbd86f3539936ff2b88232e486bb'],
  ['0008_order_revision.sql', 'cdade42eae52966c4828f69297e900056ff869bf4107ed87644e2d860de7dfd4'],
  ['0009_idempotency_claim.sql', '7ec89e560d1e072b0059b2a545e23d28eea4e2e5f7933fe20ef670dda5f85399'],
];

describe('released migrations', () => {
  it('are byte for byte the files databases applied', () => {
    const files = new Map(readMigrations().map((m) => [m.name, m.checksum]));
    for (const [file, checksum] of RELEASED) {
      assert.equal(files.get(file), checksum, `${file} changed after its release`);
    }
  });
});
