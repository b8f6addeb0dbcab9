/**
 * contract §11, bodies hold what they received at a fair share: a body's
 * share of the budget grows with the bytes that arrive (a declared length
 * reserves nothing), one client holds at most its share, and a body must
 * start soon and keep a least average rate (408, its connection closed).
 * `readBody()` on a source the test feeds, with the pace shortened.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createBodyBudget, shareOf } from '../../src/http/body-budget.ts';
import { type BodySource, readBody } from '../../src/http/body.ts';
import { HttpError } from '../../src/http/problem.ts';

/** A body source the test feeds: `send(bytes)`, `end()`. */
function fed(): BodySource & { send(bytes: number): void; end(): void } {
  let onPiece: (piece: Uint8Array) => void = () => {};
  let finish: () => void = () => {};
  return {
    pump(handler) {
      onPiece = handler;
      const done = new Promise<void>((resolve) => {
        finish = resolve;
      });
      return { done, stop() {} };
    },
    send: (bytes) => onPiece(new Uint8Array(bytes).fill(0x20)),
    end: () => finish(),
  };
}

const PACE = { firstByteMs: 60, graceMs: 120, minBytesPerSecond: 10_000, checkMs: 10 };
const MIB = 1_048_576;

/** The `HttpError` `work` rejects with (it must). */
async function refusal(work: Promise<unknown>): Promise<HttpError> {
  try {
    await work;
  } catch (error) {
    if (error instanceof HttpError) return error;
    throw error;
  }
  throw new Error('it was read');
}

describe('readBody(): what a body holds (contract §11)', () => {
  it('holds only what it received: a declared 1 MiB holds 16 KiB until more comes, then doubles', async () => {
    const budget = createBodyBudget(64 * MIB);
    const source = fed();
    const reading = readBody(source, MIB, { maxBytes: MIB, timeoutMs: 5_000, budget, owner: 'user 1', pace: PACE });
    assert.equal(budget.held, 16_384);
    source.send(20_000);
    assert.equal(budget.held, 32_768);
    source.send(MIB - 20_000);
    assert.equal(budget.held, MIB);
    source.end();
    const body = await reading;
    assert.equal(body.bytes.byteLength, MIB);
    body.release();
    assert.equal(budget.held, 0);
  });

  it("refuses a client past its share (429), while another client's bodies go on", async () => {
    const budget = createBodyBudget(64 * MIB, 2 * MIB);
    const limits = (owner: string) => ({ maxBytes: MIB, timeoutMs: 5_000, budget, owner, pace: PACE });
    const first = fed();
    const second = fed();
    const reading = [readBody(first, MIB, limits('user 1')), readBody(second, MIB, limits('user 1'))];
    first.send(MIB);
    second.send(MIB - 1);
    // A third body of the same client finds its share held: 429 before a byte is read.
    const third = await refusal(readBody(fed(), MIB, limits('user 1')));
    assert.deepEqual([third.status, third.slug, third.init.headers?.['retry-after']], [429, 'rate-limited', '1']);
    // Another client is read meanwhile.
    const other = fed();
    const read = readBody(other, 10, limits('user 2'));
    other.send(10);
    other.end();
    const small = await read;
    assert.deepEqual([small.bytes.byteLength, budget.held], [10, 2 * MIB + 10]);
    small.release();
    first.end();
    second.send(1);
    second.end();
    for (const body of await Promise.all(reading)) body.release();
    assert.equal(budget.held, 0);
  });

  it('gives each client an eighth of the budget, at least one body of the largest size', () => {
    assert.deepEqual([shareOf(64 * MIB, MIB), shareOf(4 * MIB, MIB), shareOf(MIB / 2, MIB)], [8 * MIB, MIB, MIB / 2]);
  });
});

describe('readBody(): the pace of a body (contract §11)', () => {
  const limits = () => ({
    maxBytes: MIB,
    timeoutMs: 5_000,
    budget: createBodyBudget(64 * MIB),
    owner: 'address 192.0.2.1',
    pace: PACE,
  });

  it('refuses a body whose first byte does not come in time: 408, its connection closed, nothing held', async () => {
    const l = limits();
    const refused = await refusal(readBody(fed(), MIB, l));
    assert.deepEqual(
      [refused.status, refused.message, refused.init.headers?.connection, l.budget.held],
      [408, 'The request body came too slowly: no byte came in 0.06 s.', 'close', 0],
    );
  });

  it('refuses a body that trickles below the least average rate once its first seconds are past', async () => {
    const l = limits();
    const source = fed();
    const reading = refusal(readBody(source, MIB, l));
    // 100 bytes every 10 ms: 10,000 bytes a second at best, less once the pauses count.
    const trickle = setInterval(() => source.send(50), 10);
    const refused = await reading;
    clearInterval(trickle);
    assert.deepEqual(
      [refused.status, refused.message, l.budget.held],
      [408, 'The request body came too slowly: it came at less than 10000 bytes a second.', 0],
    );
  });

  it('reads a body that starts late but within the first-byte time, and comes at the rate', async () => {
    const l = limits();
    const source = fed();
    const reading = readBody(source, 3_000, l);
    await new Promise((resolve) => setTimeout(resolve, 30));
    source.send(3_000);
    source.end();
    const body = await reading;
    assert.equal(body.bytes.byteLength, 3_000);
    body.release();
  });
});
