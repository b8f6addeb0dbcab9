/** src/db/peer.ts: the address start-up asks what it is, and how it names the answer. */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { firstPeer, identifyPeer } from '../../src/db/peer.ts';

describe('firstPeer()', () => {
  it('takes the first host of DATABASE_URL and its port (5432 by default), none for what has no host', () => {
    assert.deepEqual(firstPeer('postgres://u:p@db1:6432,db2/orders?target_session_attrs=read-write'), {
      host: 'db1',
      port: 6432,
    });
    assert.deepEqual(firstPeer('postgresql://u@db.example/orders'), { host: 'db.example', port: 5432 });
    assert.deepEqual(firstPeer('postgres://u@[::1]:5433/orders'), { host: '::1', port: 5433 });
    assert.equal(firstPeer('postgres:///orders'), undefined);
    assert.equal(firstPeer('memory:'), undefined);
    assert.equal(firstPeer(undefined), undefined);
  });
});

describe('identifyPeer()', () => {
  /** A TCP peer that answers `reply` to the first bytes it gets (nothing when undefined), and what it got. */
  async function peer(reply: Buffer | string | undefined) {
    const got: Buffer[] = [];
    const server = createServer((socket) => {
      socket.once('data', (data: Buffer) => {
        got.push(data);
        if (reply !== undefined) socket.end(reply);
      });
      socket.on('error', () => {});
    }).listen(0, '127.0.0.1');
    await once(server, 'listening');
    return { server, got, port: (server.address() as { port: number }).port };
  }

  it("sends PostgreSQL's SSLRequest and names the answer: PostgreSQL, not PostgreSQL, or silence", async () => {
    for (const [reply, expected] of [
      ['N', /^127\.0\.0\.1:\d+ speaks PostgreSQL but did not let the login finish/],
      ['S', /^127\.0\.0\.1:\d+ speaks PostgreSQL/],
      [
        'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n',
        /^127\.0\.0\.1:\d+ is not PostgreSQL: it answered "HTTP\/1\.1 400 Bad Request Connection: cl"$/,
      ],
      [
        undefined,
        /^127\.0\.0\.1:\d+ answered nothing to PostgreSQL's first message within 200 ms: is it PostgreSQL\?$/,
      ],
    ] as const) {
      const { server, got, port } = await peer(reply);
      try {
        assert.match(await identifyPeer({ host: '127.0.0.1', port }, 200), expected);
        assert.deepEqual(got[0], Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]));
      } finally {
        server.close();
      }
    }
  });
});
