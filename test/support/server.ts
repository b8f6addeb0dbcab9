/**
 * Starts the real service on a free port for HTTP tests, on the test
 * database of this run (see database.ts), with users and tokens made
 * through the same code the command-line tool uses.
 */
import { createToken } from '../../src/auth/token-store.ts';
import { SCOPES, type Scope } from '../../src/auth/tokens.ts';
import { loadConfig, type Config } from '../../src/config/config.ts';
import type { LogLevel } from '../../src/base/logger.ts';
import { createLogger } from '../../src/base/logger.ts';
import type { Tuning } from '../../src/pipeline/context.ts';
import { startServer, type RunningServer, type StartOptions } from '../../src/service/server.ts';
import { afterStatement } from './db-faults.ts';
import { createUser } from '../../src/users/store.ts';
import { seed } from '../../src/service/seed.ts';
import { createTestDatabase, type TestDatabase } from './database.ts';
import { createContract } from './contract.ts';
import { AssertionError } from 'node:assert';
import postgres from 'postgres';

/** One contract for every server of a test file: the document is the same. */
export const contract = createContract();

/** A user of a test server and their token (every scope unless said otherwise). */
export type Account = { id: number; token: string; tokenId: number };

export interface TestServer {
  readonly server: RunningServer;
  readonly database: TestDatabase;
  readonly url: string;
  /** Every log line the server wrote, parsed. */
  readonly logs: Record<string, unknown>[];
  /** `fetch` of a path on this server. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** A new user and a token for them with `scopes` (default: every scope). */
  user(role: 'customer' | 'admin', scopes?: readonly Scope[]): Promise<Account>;
  /** The key this server signs cursors with (contract §4), as every process of its database shares it. */
  cursorKey(): Promise<Uint8Array>;
  close(): Promise<void>;
}

/** What a test may change of a server: the bounds and timings of `Tuning`, and a fault in the payment. */
export interface TestHooks extends Tuning {
  /** Runs after the payment row is inserted, before the order moves to paid and the transaction commits. */
  afterPaymentInsert?(): Promise<void>;
  /** A request's time for the database in all (contract §11's 5 s). */
  databaseDeadlineMs?: number;
}

let counter = 0;

export async function startTestServer(
  env: Record<string, string> = {},
  database?: TestDatabase,
  hooks?: TestHooks,
  webhooks?: StartOptions['webhooks'],
): Promise<TestServer> {
  const db = database ?? (await createTestDatabase());
  // A run with DATABASE_READ_URL gives the test database's replica to every server whose test chose no databases.
  const runReplica = db.readUrl !== undefined && env.DATABASE_URL === undefined && env.DATABASE_READ_URL === undefined;
  const config: Config = loadConfig({
    PORT: '0',
    LOG_LEVEL: 'info' satisfies LogLevel,
    RATE_LIMIT: 'off',
    // A run through a transaction-mode pooler (DB_PREPARE=off) reaches every server of the suite.
    ...(process.env.DB_PREPARE === undefined ? {} : { DB_PREPARE: process.env.DB_PREPARE }),
    ...(runReplica ? { DATABASE_READ_URL: db.readUrl } : {}),
    ...env,
    DATABASE_URL: env.DATABASE_URL ?? db.url,
  });
  const logs: Record<string, unknown>[] = [];
  const log = createLogger(config.logLevel, (line) => {
    logs.push(JSON.parse(line) as Record<string, unknown>);
  });
  const { afterPaymentInsert, databaseDeadlineMs, ...tuning } = hooks ?? {};
  const server = await startServer(config, {
    log,
    // No loop watch unless a test gives one: this process's event loop is the test's too, its clients' work and
    // other servers' with it, so its delay is not this server's overload (a spawned program watches its own).
    tuning,
    ...(databaseDeadlineMs === undefined ? {} : { databaseDeadlineMs }),
    ...(afterPaymentInsert === undefined ? {} : { database: afterStatement('InsertPayment', afterPaymentInsert) }),
    ...(webhooks ? { webhooks } : {}),
  });
  // The embedded database seeds itself when created; a real server's never does.
  if (!server.db.created) await seed(server.db);
  // With the run's replica, a test's own writes around the service (SQL, users, tokens) reach the standby before
  // its next GET or HEAD through `fetch`: the service promises read-your-writes for writes through the API only
  // (test/db/replica.test.ts tests that promise, with replay paused).
  const standby = runReplica ? postgres(db.readUrl as string, { max: 1, onnotice: () => {} }) : undefined;
  const replayed = async () => {
    if (standby === undefined) return;
    const lsn = (await server.db.one('CurrentWalPosition')).lsn;
    for (const deadline = Date.now() + 10_000; ; ) {
      const [row] = await standby`SELECT pg_last_wal_replay_lsn() >= ${lsn}::pg_lsn AS done`;
      if (row?.done === true) return;
      if (Date.now() > deadline) throw new Error(`the standby did not replay ${lsn} within 10 s`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  };
  // The seed too: a test that calls the server with its own client (not `fetch` below) reads the seeded catalog
  // at once (CI's replica run once answered 404 for /v1/products/1 to the first request of such a test).
  await replayed();
  return {
    server,
    database: db,
    url: server.url,
    logs,
    async fetch(path, init) {
      const method = init?.method ?? 'GET';
      if (method === 'GET' || method === 'HEAD') await replayed();
      const response = await fetch(server.url + path, init);
      const body = await response.clone().text();
      const violations = contract.check(init?.method ?? 'GET', server.url + path, response, body);
      if (violations.length > 0)
        throw new AssertionError({
          message: `the response disagrees with the OpenAPI document:\n${violations.join('\n')}`,
        });
      return response;
    },
    async user(role, scopes = SCOPES) {
      counter += 1;
      const row = await createUser(server.db, {
        email: `${role}${counter}.${process.pid}@example.test`,
        name: `Test ${role} ${counter}`,
        role,
      });
      const { token, record } = await createToken(server.db, row.id, scopes, null);
      return { id: row.id, token, tokenId: record.id };
    },
    async cursorKey() {
      return new Uint8Array((await server.db.one('ServiceKey', ['cursor'])).key);
    },
    async close() {
      await standby?.end();
      await server.close(1_000);
      if (database === undefined) await db.drop();
    },
  };
}

/** `Authorization` header for `token`. */
export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}
