/**
 * A migration never changes once released: a database that applied it
 * records its checksum, and migrate() refuses to start when the file no
 * longer matches (test/db/migrations.test.ts). This pins the checksum of every
 * released migration, so that an edit (a reworded comment, a reformatting)
 * fails here rather than on an operator's database. A new migration adds its
 * row in the commit that adds the file: a migration on main is released, and
 * one without its row fails the second test.
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
  ['0010_webhook_endpoint_lease.sql', '7c496fb90ae3561ad81c1858bbf75b112b9affa06e0e79ff3db06efeb636e797'],
  ['0011_webhook_delivery_counts.sql', 'eaa9488ff5a8ac32e368219a6e4847fa3f893367c8cd6b5c1ed88f00015cdea9'],
  ['0012_keyset_indexes.sql', 'fa818f318aad5a1dce73600312363de9561894ca0464a2cfaf71831973000513'],
  ['0013_service_keys.sql', '056683a3d883b2c5119721ad913b727cbbffc06d127b3bea1a2701acb0ead20b'],
  ['0014_idempotent_create_order.sql', '5e738c96cc446ab963494c76ad09fbc8023b12ff98af0db2a9471d8f150c4d0d'],
  ['0015_revision_of_new_orders.sql', '913ef36e4131c3fa754487185814453344b69485bc4a309350b6d06e1565f820'],
  ['0016_token_key.sql', '4be7f47458dc079faed479a4a39aa93745bd3a83f128fc5d2e59d6b9e6a4774c'],
  ['0017_order_json.sql', '8cdb9880858ba14441db0bc0ea95c4cf33856e40f6c4745a7ebe23f49ef72590'],
  ['0018_order_items_json.sql', '64b37bc31d911c0747fe4d39e254eac3d4fb4a83c06374529fc4efd1a667e2d0'],
  ['0019_order_json_concatenated.sql', '1f3f2c7a7278aed23ad4dba9975cf26fbd32b60b3c98b2e89e3277049c0c125e'],
  ['0020_trigger_fast_paths.sql', 'b821ea296d49bb5e31f437a1c013132608597c28f2f6daf76d950ec0bb0ca025'],
  ['0021_deliveries_when_subscribed.sql', 'f562adcb2cca77b587381a0a7b1f0ebaf465dca8eaa2267905e5b5bbf13f4fb2'],
];

describe('released migrations', () => {
  it('are byte for byte the files databases applied', () => {
    const files = new Map(readMigrations().map((m) => [m.name, m.checksum]));
    for (const [file, checksum] of RELEASED) {
      assert.equal(files.get(file), checksum, `${file} changed after its release`);
    }
  });

  it('are every file in sql/migrations: a new one is pinned when it is added', () => {
    const pinned = new Set(RELEASED.map(([file]) => file));
    const unpinned = readMigrations()
      .map((m) => m.name)
      .filter((name) => !pinned.has(name));
    assert.deepEqual(unpinned, []);
  });
});
