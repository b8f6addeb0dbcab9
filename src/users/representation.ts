/** The user as both versions represent it (contract §2), and its schemas in the OpenAPI document. */
import * as v from 'valibot';
import type { Role } from '../auth/authenticator.ts';
import { Id, named, page, Timestamp } from '../openapi/atoms.ts';

export interface UserRow {
  id: number;
  email: string;
  name: string;
  role: Role;
  created_at: Date;
}

/** The user representation; the same in both versions (contract §2). */
export function userRepresentation(row: UserRow) {
  return { id: row.id, email: row.email, name: row.name, role: row.role, createdAt: row.created_at };
}

/** The schema of `userRepresentation()`, alone and as a page. */
export const USER = named(
  'User',
  v.strictObject({
    id: Id,
    email: v.string(),
    name: v.string(),
    role: v.picklist(['customer', 'admin']),
    createdAt: Timestamp,
  }),
);
export const USER_PAGE = page('UserPage', USER);
