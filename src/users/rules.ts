/** The rules of users, pure: the body of a new user (contract §4). */
import * as v from 'valibot';
import { named } from '../openapi/atoms.ts';

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

/** The schema of `POST /users`'s body in the OpenAPI document. */
export const NEW_USER = named('NewUser', NewUserSchema);
