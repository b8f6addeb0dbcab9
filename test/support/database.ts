/**
 * The database a test file runs against: with `DATABASE_URL` set, a fresh
 * database created on that server for this file and dropped afterwards;
 * without it, an in-memory embedded one (`memory:`).
 */
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';

export interface TestDatabase {
  /** The `DATABASE_URL` the service should use. */
  readonly url: string;
  /** True when this is a real PostgreSQL server. */
  readonly real: boolean;
  /** Parameters of the real server's test database, for tests that connect around the service. */
  readonly target?: { readonly host: string; readonly port: number; readonly database: string; readonly user: string };
  drop(): Promise<void>;
}

const url = process.env.DATABASE_URL;
/** The real PostgreSQL server of this run, when `DATABASE_URL` names one. */
export const REAL_SERVER_URL = url === undefined || url === '' || url === 'memory:' ? undefined : url;

/**
 * `DB_PREPARE` of this run (contract §17): `off` when the suite runs through a
 * transaction-mode pooler, for the pools tests open around the service.
 */
export const TEST_PREPARE = process.env.DB_PREPARE !== 'off';

/** The variables that point a service or the tool at `url` as this run reaches databases (through a pooler or not). */
export function databaseEnv(url: string): Record<string, string> {
  return { DATABASE_URL: url, ...(TEST_PREPARE ? {} : { DB_PREPARE: 'off' }) };
}

export async function createTestDatabase(): Promise<TestDatabase> {
  if (REAL_SERVER_URL === undefined) {
    return { url: 'memory:', real: false, drop: async () => {} };
  }
  const name = `orders_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = postgres(REAL_SERVER_URL as string, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(REAL_SERVER_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    real: true,
    target: {
      host: url.hostname,
      port: Number(url.port || 5432),
      database: name,
      user: decodeURIComponent(url.username || 'postgres'),
    },
    async drop() {
      const sql = postgres(REAL_SERVER_URL as string, { max: 1, onnotice: () => {} });
      try {
        await sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await sql.end();
      }
    },
  };
}
