/**
 * The statements of users (`sql/queries/users.sql`): creating one, with its
 * event (shared by `POST /users` and the command-line tool), and reading one.
 */
import type { Db } from '../db/database.ts';
import { recordEvent } from '../outbox/outbox.ts';
import { UNIQUE_VIOLATION } from '../db/errors.ts';
import type { NewUser } from './rules.ts';
import { userRepresentation, type UserRow } from './representation.ts';

export class UserExistsError extends Error {
  override name = 'UserExistsError';
}

/** Inserts `user`; throws `UserExistsError` when the e-mail address is taken (whatever its case). */
export async function createUser(db: Db, user: NewUser): Promise<UserRow> {
  try {
    return await db.begin(async (db) => {
      const row = await db.one('InsertUser', [user.email, user.name, user.role]);
      await recordEvent(db, 'user.created', row.role === 'customer' ? row.id : null, userRepresentation(row));
      return row;
    });
  } catch (error) {
    if ((error as { code?: unknown }).code === UNIQUE_VIOLATION) {
      throw new UserExistsError(`a user with the e-mail address ${user.email} exists already`);
    }
    throw error;
  }
}

/** User `id`, or `undefined` when there is none. */
export async function getUser(db: Db, id: number): Promise<UserRow | undefined> {
  return db.opt('GetUser', [id]);
}
