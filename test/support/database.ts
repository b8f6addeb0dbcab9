/**
 * The database a test file runs against: with `DATABASE_URL` set, a fresh
 * database created on that server for this file and dropped afterwards;
 * without it, an in-memory embedded one (`memory:`). With `DATABASE_READ_URL`
 * too (a streaming standby of that server, contract §17), the same database
 * there, once the standby has it.
 */
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { until } from './tools.ts';
import type { Sql } from '../../src/db/connection.ts';
import { QUERIES_DIR } from '../../src/db/database.ts';
import { loadStatements } from '../../src/db/statements.ts';
import { transaction, transactionTexts, type TransactionSql, type TransactionTexts } from '../../src/db/transaction.ts';

export interface TestDatabase {
  /** The `DATABASE_URL` the service should use. */
  readonly url: string;
  /** The `DATABASE_READ_URL` the service should use: this database on the run's standby, when it has one. */
  readonly readUrl?: string;
  /** True when this is a real PostgreSQL server. */
  readonly real: boolean;
  /** Parameters of the real server's test database, for tests that connect around the service. */
  readonly target?: { readonly host: string; readonly port: number; readonly database: string; readonly user: string };
  drop(): Promise<void>;
}

const url = process.env.DATABASE_URL;
/** The real PostgreSQL server of this run, when `DATABASE_URL` names one. */
export const REAL_SERVER_URL = url === undefined || url === '' || url === 'memory:' ? undefined : url;

const readEnv = process.env.DATABASE_READ_URL;
/** A streaming standby of the real server of this run, when `DATABASE_READ_URL` names one (any of its databases). */
export const STANDBY_URL =
  REAL_SERVER_URL === undefined || readEnv === undefined || readEnv === '' ? undefined : readEnv;

/** How long a new database may take to reach the standby. */
const STANDBY_WAIT_MS = 10_000;

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
  const drop = async () => {
    const sql = postgres(REAL_SERVER_URL as string, { max: 1, onnotice: () => {} });
    try {
      await sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    } finally {
      await sql.end();
    }
  };
  const url = new URL(REAL_SERVER_URL);
  url.pathname = `/${name}`;
  let readUrl: URL | undefined;
  if (STANDBY_URL !== undefined) {
    readUrl = new URL(STANDBY_URL);
    readUrl.pathname = `/${name}`;
    await untilOnStandby(name).catch(async (error: unknown) => {
      await drop();
      throw error;
    });
  }
  return {
    url: url.toString(),
    ...(readUrl === undefined ? {} : { readUrl: readUrl.toString() }),
    real: true,
    target: {
      host: url.hostname,
      port: Number(url.port || 5432),
      database: name,
      user: decodeURIComponent(url.username || 'postgres'),
    },
    drop,
  };
}

/** Resolves once the run's standby has database `name` (replicated from the server): a service finds it at once. */
async function untilOnStandby(name: string): Promise<void> {
  const sql = postgres(STANDBY_URL as string, { max: 1, onnotice: () => {}, prepare: TEST_PREPARE });
  try {
    await until(
      async () => (await sql`SELECT 1 FROM pg_database WHERE datname = ${name}`).length === 1,
      () => `the standby (DATABASE_READ_URL) has no database ${name} ${STANDBY_WAIT_MS} ms after its creation`,
      STANDBY_WAIT_MS,
    );
  } finally {
    await sql.end();
  }
}

/** The service's transaction (src/db/transaction.ts) on `sql`, with the statements of sql/queries/transactions.sql. */
export function serviceTransaction<T>(sql: Sql, work: (tx: TransactionSql) => Promise<T>): Promise<T> {
  texts ??= transactionTexts((name) => {
    const found = loadStatements(QUERIES_DIR).get(name);
    if (found === undefined) throw new Error(`no statement ${name}`);
    return found;
  });
  return transaction(sql, work, texts);
}
let texts: TransactionTexts | undefined;
