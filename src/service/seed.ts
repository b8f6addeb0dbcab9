/**
 * The demo data (contract §1): `sql/seed/demo.sql`, idempotent, and the two demo
 * tokens printed once when the embedded database is first created.
 */
import { join } from 'node:path';
import { readSqlFile, SQL_DIR } from '../db/sql-files.ts';
import { createToken } from '../auth/token-store.ts';
import { SCOPES } from '../auth/tokens.ts';
import type { Database } from '../db/database.ts';

const SEED_DIR = join(SQL_DIR, 'seed');

export const DEMO_ADMIN_EMAIL = 'admin@example.com';
export const DEMO_CUSTOMER_EMAIL = 'customer@example.com';
/** A customer may not administer users or webhooks. */
export const CUSTOMER_SCOPES = SCOPES.filter((s) => s !== 'users:write' && s !== 'webhooks:write');

/** Loads the demo catalog and users; running it again changes nothing. */
export async function seed(db: Database): Promise<void> {
  await db.sql.unsafe(readSqlFile(SEED_DIR, 'demo.sql'));
}

export interface DemoTokens {
  readonly admin: string;
  readonly customer: string;
}

/** Creates one admin token (every scope) and one customer token for the demo users. */
export async function createDemoTokens(db: Database): Promise<DemoTokens> {
  const admin = await db.opt('FindUserByEmail', [DEMO_ADMIN_EMAIL]);
  const customer = await db.opt('FindUserByEmail', [DEMO_CUSTOMER_EMAIL]);
  if (admin === undefined || customer === undefined) throw new Error('the demo users are missing: run the seed first');
  return {
    admin: (await createToken(db, admin.id, SCOPES, null)).token,
    customer: (await createToken(db, customer.id, CUSTOMER_SCOPES, null)).token,
  };
}
