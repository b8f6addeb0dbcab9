/**
 * A token for a service started as a child process (test/support/process.ts):
 * on the embedded database, the demo admin token it printed when it made the
 * database (with the demo catalog); on a real server, a new admin's, made
 * through the same code the command-line tool uses once the service has
 * applied the migrations, with the demo catalog seeded (as `orders seed`).
 */
import { createToken } from '../../src/auth/token-store.ts';
import { SCOPES } from '../../src/auth/tokens.ts';
import { openDatabase } from '../../src/db/database.ts';
import { seed } from '../../src/service/seed.ts';
import { createUser } from '../../src/users/store.ts';
import { TEST_PREPARE, type TestDatabase } from './database.ts';
import type { ServiceProcess } from './process.ts';

let made = 0;

/** An admin token, with every scope, for `service` on `database`. */
export function adminToken(database: TestDatabase, service: ServiceProcess): Promise<string> {
  return tokenOf('admin', database, service);
}

/** A token of a new user of `role` (on the embedded database, the demo user's it printed), with every scope. */
export async function tokenOf(
  role: 'admin' | 'customer',
  database: TestDatabase,
  service: ServiceProcess,
): Promise<string> {
  if (!database.real) {
    const printed = new RegExp(`${role}: +(ord_[A-Za-z0-9_-]+)\\n`).exec(service.stderr())?.[1];
    if (printed === undefined) throw new Error(`the service printed no ${role} token: ${service.stderr()}`);
    return printed;
  }
  const db = await openDatabase({ databaseUrl: database.url, dataDir: '', poolMax: 1, prepare: TEST_PREPARE });
  try {
    await seed(db);
    made += 1;
    const user = await createUser(db, {
      email: `${role}${made}.${process.pid}@example.test`,
      name: role === 'admin' ? 'Admin' : 'Customer',
      role,
    });
    return (await createToken(db, user.id, SCOPES, null)).token;
  } finally {
    await db.close();
  }
}
