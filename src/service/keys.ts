/**
 * The keys the service signs with (contract §4: cursors), kept in the
 * database so that every process that names it shares them: the first
 * process to start writes each, from node's random source; every process
 * reads what was kept (sql/queries/keys.sql).
 */
import { randomBytes } from 'node:crypto';
import type { Database } from '../db/database.ts';

export type KeyName = 'cursor';

/** The key named `name`, written now if this is the first start. */
export async function serviceKey(db: Database, name: KeyName): Promise<Uint8Array> {
  await db.exec('KeepServiceKey', [name, randomBytes(32)]);
  const row = await db.one<{ key: Uint8Array }>('ServiceKey', [name]);
  if (row === undefined) throw new Error(`the service key ${name} was not kept`);
  return new Uint8Array(row.key);
}
