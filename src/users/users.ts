/**
 * Users (contract §2, §6). A customer sees only their own record: another
 * user's id answers 404, exactly as a missing one, and the list holds only
 * them. An admin sees everyone.
 */
import { principalOf, type RequestContext, type RouteSpec } from '../pipeline/context.ts';
import { collectionHandler } from '../pipeline/collection.ts';
import { where } from '../db/page.ts';
import { userConditions } from '../auth/ownership.ts';
import { jsonResponse } from '../http/json.ts';
import type { ListSpec } from '../http/list-query.ts';
import { HttpError } from '../http/problem.ts';
import { validationError } from '../http/json-body.ts';
import { readJsonBody } from '../pipeline/body.ts';
import { createUser, NewUserSchema, UserExistsError } from './user-store.ts';
import { named } from '../openapi/atoms.ts';
import { USER, USER_PAGE, userRepresentation, type UserRow } from './representation.ts';

const NEW_USER = named('NewUser', NewUserSchema);

type UserSortKey = 'id' | 'createdAt';
const LIST: ListSpec<UserSortKey, Record<string, never>> = {
  sortKeys: ['id', 'createdAt'],
  keyTypes: { id: 'bigint', createdAt: 'timestamptz' },
  filters: {},
};
const SORT_COLUMNS: Record<UserSortKey, string> = { id: 'id', createdAt: 'created_at' };

const listUsers = collectionHandler({
  list: LIST,
  sql: (ctx) => {
    const filter = where(userConditions(principalOf(ctx)));
    return {
      list: 'ListUsers',
      count: 'CountUsers',
      columns: SORT_COLUMNS,
      where: filter.sql,
      params: filter.params,
    };
  },
  represent: (row: UserRow) => userRepresentation(row),
});

async function getUser(ctx: RequestContext): Promise<Response> {
  const principal = principalOf(ctx);
  const id = ctx.params.id as number;
  const row =
    principal.role === 'admin' || principal.userId === id ? await ctx.db.one<UserRow>('GetUser', [id]) : undefined;
  if (row === undefined) throw new HttpError(404, 'not-found', { detail: `There is no user ${id}.` });
  return jsonResponse(userRepresentation(row));
}

async function create(ctx: RequestContext): Promise<Response> {
  // contract §6: creating users is an admin's act, whatever scopes a token carries.
  if (principalOf(ctx).role !== 'admin')
    throw new HttpError(403, 'forbidden', { detail: 'Only an admin may create users.' });
  const body = readJsonBody(ctx, NewUserSchema);
  let row: UserRow;
  try {
    row = await createUser(ctx.db, body);
  } catch (error) {
    if (error instanceof UserExistsError)
      throw validationError([{ pointer: '/email', detail: 'is already the address of another user' }]);
    throw error;
  }
  return jsonResponse(userRepresentation(row), 201, { location: `${ctx.url.pathname}/${row.id}` });
}

export const userRoutes: readonly RouteSpec[] = [
  {
    method: 'POST',
    pattern: '/users',
    auth: 'users:write',
    handler: create,
    doc: {
      summary: 'Create a user (admin)',
      description:
        'Only an admin may create users, whatever scopes the token carries (403 otherwise). The email must not ' +
        'be that of another user (422).',
      success: { status: 201, schema: USER },
      body: NEW_USER,
      problems: [[422, 'validation']],
    },
  },
  {
    method: 'GET',
    pattern: '/users',
    auth: 'users:read',
    handler: listUsers,
    doc: {
      summary: 'List users',
      description: 'A customer sees only their own record.',
      success: { status: 200, schema: USER_PAGE },
      list: LIST,
    },
  },
  {
    method: 'GET',
    pattern: '/users/{id:int}',
    auth: 'users:read',
    handler: getUser,
    doc: {
      summary: 'Get a user',
      description:
        "An admin may read any user; a customer only themselves: another user's id answers 404, exactly as a " +
        'missing one.',
      success: { status: 200, schema: USER },
    },
  },
];
