/**
 * Rotating the cursor key (contract §4; src/db/keys.ts, `orders keys rotate`):
 * a new key seals from the rotation on, the one it replaced still opens the
 * cursors given out before, and a process that has not read the new key yet
 * reads it when a cursor sealed under it comes: no request fails. Two
 * rotations drop the oldest key.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { rotateCursorKey } from '../../src/db/keys.ts';
import { decodeCursor, encodeCursor } from '../../src/http/cursor.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let t: TestServer;

before(async () => {
  t = await startTestServer({ RATE_LIMIT: 'off' });
});
after(async () => {
  await t.close();
});

/** The keys kept now: the current one first. */
const keysNow = async () => (await t.server.db.many('CursorKeys')).map((row) => new Uint8Array(row.key));

/** The cursor of the next link of `path`. */
async function nextCursor(path: string): Promise<string> {
  const body = (await (await t.fetch(path)).json()) as { meta: { next: string } };
  return new URL(body.meta.next, t.url).searchParams.get('cursor') as string;
}

const SCOPE = { sort: [], filters: {}, pageSize: 5, principal: 'anyone' };
const opens = (keys: Uint8Array[], cursor: string) =>
  'values' in decodeCursor(keys, cursor, '/products', SCOPE, { id: 'bigint' });

describe('rotating the cursor key (contract §4)', () => {
  it('seals under the new key, opens the old cursors, and reads the new key when its first cursor comes', async () => {
    const [original] = await keysNow();
    const before = await nextCursor('/v1/products?pageSize=5');
    assert.ok(opens([original as Uint8Array], before));
    assert.equal(await rotateCursorKey(t.server.db), true);
    const [current, previous] = await keysNow();
    assert.deepEqual(previous, original);
    // A cursor sealed under the new key (as another process that read it makes them): this process has not read
    // it yet, and reads it now; the request does not fail.
    const sealed = encodeCursor(current as Uint8Array, '/products', SCOPE, ['5'], 2);
    const follow = await t.fetch(`/v1/products?pageSize=5&cursor=${sealed}`);
    assert.equal(follow.status, 200);
    assert.deepEqual(
      ((await follow.json()) as { data: { id: number }[] }).data.map((p) => p.id),
      [6, 7, 8, 9, 10],
    );
    // The cursor given before the rotation still opens; the next ones are sealed under the new key.
    assert.equal((await t.fetch(`/v1/products?pageSize=5&cursor=${before}`)).status, 200);
    const after = await nextCursor('/v1/products?pageSize=5');
    assert.deepEqual([opens([current as Uint8Array], after), opens([original as Uint8Array], after)], [true, false]);
    // A second rotation drops the original key: its cursors are refused once the process has read the keys.
    assert.equal(await rotateCursorKey(t.server.db), true);
    const [newest] = await keysNow();
    assert.equal(
      (
        await t.fetch(
          `/v1/products?pageSize=5&cursor=${encodeCursor(newest as Uint8Array, '/products', SCOPE, ['5'], 2)}`,
        )
      ).status,
      200,
    );
    const refused = await t.fetch(`/v1/products?pageSize=5&cursor=${before}`);
    assert.equal(refused.status, 400);
    assert.equal(((await refused.json()) as { errors: { parameter: string }[] }).errors[0]?.parameter, 'cursor');
  });
});
