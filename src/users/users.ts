/**
 * Users (SPEC §2, §6). A customer sees only their own record: another
 * user's id answers 404, exactly as a missing one, and the list holds only
 * them. An admin sees everyone.
 */
import { principalOf, type RequestContext, type RouteSpec } from '../app.ts';
import type { Role } from '../auth/authenticator.ts';
import { collectionResponse, fetchPage, listQueryOf } from '../http/collection.ts';
import { jsonResponse } from '../http/json.ts';
import { orderBy, type ListSpec } from '../http/list-query.ts';
import { HttpError } from '../http/problem.ts';

export interface UserRow {
  id: number;
  email: string;
  name: string;
  role: Role;
  created_at: Date;
}

/** The user representation; the same in both versions (SPEC §2). */
export function userRepresentation(row: UserRow) {
  return { id: row.id, email: row.email, name: row.name, role: row.role, createdAt: row.created_at };
}

type UserSortKey = 'id' | 'createdAt';
const LIST: ListSpec<UserSortKey, Record<string, never>> = { sortKeys: ['id', 'createdAt'], filters: {} };
const SORT_COLUMNS: Record<UserSortKey, string> = { id: 'id', createdAt: 'created_at' };

async function listUsers(ctx: RequestContext): Promise<Response> {
  const principal = principalOf(ctx);
  const query = listQueryOf(ctx.url, LIST);
  const only = principal.role === 'admin' ? null : principal.userId;
  const { rows, total } = await fetchPage<UserRow>(ctx.services.db, 'ListUsers', 'CountUsers', orderBy(query.sort, SORT_COLUMNS), [only], query);
  return collectionResponse(ctx.url, rows.map(userRepresentation), total, query);
}

async function getUser(ctx: RequestContext): Promise<Response> {
  const principal = principalOf(ctx);
  const id = ctx.params.id as number;
  const row = principal.role === 'admin' || principal.userId === id ? await ctx.services.db.one<UserRow>('GetUser', [id]) : undefined;
  if (row === undefined) throw new HttpError(404, 'not-found', { detail: `There is no user ${id}.` });
  return jsonResponse(userRepresentation(row));
}

export const userRoutes: readonly RouteSpec[] = [
  { method: 'GET', pattern: '/users', auth: 'users:read', handler: listUsers },
  { method: 'GET', pattern: '/users/{id:int}', auth: 'users:read', handler: getUser },
];
