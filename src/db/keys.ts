/**
 * The keys the service signs with (contract §4: cursors; §10: tokens), kept in the database so that every process
 * shares them; the first process to start writes each. After a rotation (`orders keys rotate`), the old cursor key
 * still opens.
 */
import { randomBytes } from 'node:crypto';
import type { Database } from './database.ts';

export type KeyName = 'cursor' | 'token';

/** The key named `name`, written now if this is the first start. */
export async function serviceKey(db: Database, name: KeyName): Promise<Uint8Array> {
  await db.exec('KeepServiceKey', [name, randomBytes(32)]);
  return new Uint8Array((await db.one('ServiceKey', [name])).key);
}

/** The cursor keys a process holds, and how it reads them again. */
export interface CursorKeys {
  /** The current key, which seals, then the previous one when a rotation kept one. */
  readonly keys: readonly Uint8Array[];
  /** Reads them again, at most once a second (callers meanwhile share the next read). */
  reload(): Promise<void>;
  stop(): void;
}

/** How often a process reads the cursor keys again: two rotations at least this far apart fail no cursor. */
export const KEYS_RELOAD_MS = 60_000;

/** The least time between reads when a cursor no key opens comes: a flood of them costs one read a second. */
export const RELOAD_AT_MOST_EVERY_MS = 1_000;

/** The cursor keys of `db`, read again every `KEYS_RELOAD_MS` until `stop()`. */
export async function cursorKeys(db: Database, failed: (error: unknown) => void = () => {}): Promise<CursorKeys> {
  await serviceKey(db, 'cursor');
  const read = async () => (await db.many('CursorKeys')).map((row) => new Uint8Array(row.key));
  let keys = await read();
  let last = performance.now();
  let reading: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  const held: CursorKeys = {
    get keys() {
      return keys;
    },
    stop() {
      clearInterval(timer);
    },
    reload() {
      if (reading !== undefined) return reading;
      // A caller within the second waits for the next read, so a rotation's first cursor is still taken.
      const wait = Math.max(0, last + RELOAD_AT_MOST_EVERY_MS - performance.now());
      reading = new Promise((resolve) => setTimeout(resolve, wait))
        .then(() => {
          last = performance.now();
          return read();
        })
        .then((found) => {
          if (found.length > 0) keys = found;
        })
        .finally(() => {
          reading = undefined;
        });
      return reading;
    },
  };
  timer = setInterval(() => held.reload().catch(failed), KEYS_RELOAD_MS);
  timer.unref();
  return held;
}

/** Rotates the cursor key; false when nothing rotated (no key yet, or another rotation at the same time). */
export async function rotateCursorKey(db: Database): Promise<boolean> {
  return (await db.opt('RotateCursorKey', [randomBytes(32)])) !== undefined;
}
