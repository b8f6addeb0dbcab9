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
export async function adminToken(database: TestDatabase, service: ServiceProcess): Promise<string> {
  if (!database.real) {
    const printed = /admin: +(ord_[A-Za-z0-9_-]{43})\n/.exec(service.stderr())?.[1];
    if (printed === undefined) throw new Error(`the service printed no admin token: ${service.stderr()}`);
    return printed;
  }
  const db = await openDatabase({ databaseUrl: database.url, dataDir: '', poolMax: 1, prepare: TEST_PREPARE });
  try {
    await seed(db);
    made += 1;
    const user = await createUser(db, {
      email: `admin${made}.${process.pid}@example.test`,
      name: 'Admin',
      role: 'admin',
    });
    return (await createToken(db, user.id, SCOPES, null)).token;
  } finally {
    await db.close();
  }
}
