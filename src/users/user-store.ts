/** Creating users, shared by `POST /users` and the command-line tool. */
import * as v from 'valibot';
import type { Db } from '../db/database.ts';
import { recordEvent } from '../events/outbox.ts';
import { UNIQUE_VIOLATION } from '../db/errors.ts';
import { userRepresentation, type UserRow } from './representation.ts';

/** The body of a new user; unknown members are refused (contract §4: no mass assignment). */
export const NewUserSchema = v.strictObject({
  email: v.pipe(
    v.string(),
    v.trim(),
    v.maxLength(254, 'must be at most 254 characters'),
    v.email('must be an e-mail address'),
  ),
  name: v.pipe(
    v.string(),
    v.trim(),
    v.minLength(1, 'must not be empty'),
    v.maxLength(200, 'must be at most 200 characters'),
  ),
  role: v.optional(v.picklist(['customer', 'admin'], 'must be customer or admin'), 'customer'),
});
export type NewUser = v.InferOutput<typeof NewUserSchema>;

export class UserExistsError extends Error {
  override name = 'UserExistsError';
}

/** Inserts `user`; throws `UserExistsError` when the e-mail address is taken (whatever its case). */
export async function createUser(db: Db, user: NewUser): Promise<UserRow> {
  try {
    return await db.begin(async (db) => {
      const row = (await db.one<UserRow>('InsertUser', [user.email, user.name, user.role])) as UserRow;
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
