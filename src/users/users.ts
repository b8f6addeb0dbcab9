/**
 * Users (SPEC §2, §6). A customer sees only their own record: another
 * user's id answers 404, exactly as a missing one, and the list holds only
 * them. An admin sees everyone.
 */
import { principalOf, type RequestContext, type RouteSpec } from '../app.ts';
import type { Role } from '../auth/authenticator.ts';
import { collectionResponse, fetchPage, listQueryOf } from '../http/collection.ts';
import { jsonResponse } from '../http/json.ts';
import { orderBy, where, type ListSpec } from '../http/list-query.ts';
import { HttpError } from '../http/problem.ts';
import { checkJsonContentType, parseJson, validate, validationError } from '../http/json-body.ts';
import { createUser, NewUserSchema, UserExistsError } from './user-store.ts';

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
  const conditions = principal.role === 'admin' ? [] : [{ sql: (p: string) => `id = ${p}`, value: principal.userId }];
  const filter = where(conditions);
  const { rows, total } = await fetchPage<UserRow>(ctx.services.db, 'ListUsers', 'CountUsers', { orderBy: orderBy(query.sort, SORT_COLUMNS), where: filter.sql }, filter.params, query);
  return collectionResponse(ctx.url, rows.map(userRepresentation), total, query);
}

async function getUser(ctx: RequestContext): Promise<Response> {
  const principal = principalOf(ctx);
  const id = ctx.params.id as number;
  const row = principal.role === 'admin' || principal.userId === id ? await ctx.services.db.one<UserRow>('GetUser', [id]) : undefined;
  if (row === undefined) throw new HttpError(404, 'not-found', { detail: `There is no user ${id}.` });
  return jsonResponse(userRepresentation(row));
}

async function create(ctx: RequestContext): Promise<Response> {
  // SPEC §6: creating users is an admin's act, whatever scopes a token carries.
  if (principalOf(ctx).role !== 'admin') throw new HttpError(403, 'forbidden', { detail: 'Only an admin may create users.' });
  checkJsonContentType(ctx.request.headers.get('content-type'), { version: ctx.version });
  const body = validate(NewUserSchema, parseJson(ctx.body));
  let row: UserRow;
  try {
    row = await createUser(ctx.services.db, body, ctx.tx);
  } catch (error) {
    if (error instanceof UserExistsError) throw validationError([{ pointer: '/email', detail: 'is already the address of another user' }]);
    throw error;
  }
  return jsonResponse(userRepresentation(row), 201, { location: `${ctx.url.pathname}/${row.id}` });
}

export const userRoutes: readonly RouteSpec[] = [
  {
    method: 'POST', pattern: '/users', auth: 'users:write', handler: create,
    doc: {
      summary: 'Create a user (admin)',
      description: 'Only an admin may create users, whatever scopes the token carries (403 otherwise). The email must not be that of another user (422).',
      success: { status: 201, schema: 'User' }, body: 'NewUser', problems: [[422, 'validation']],
    },
  },
  {
    method: 'GET', pattern: '/users', auth: 'users:read', handler: listUsers,
    doc: { summary: 'List users', description: 'A customer sees only their own record.', success: { status: 200, schema: 'UserPage' }, list: LIST },
  },
  {
    method: 'GET', pattern: '/users/{id:int}', auth: 'users:read', handler: getUser,
    doc: {
      summary: 'Get a user',
      description: 'An admin may read any user; a customer only themselves: another user\'s id answers 404, exactly as a missing one.',
      success: { status: 200, schema: 'User' },
    },
  },
];
