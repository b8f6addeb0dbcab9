/**
 * The user handlers (contract §2, §6): a request in, an answer out. A
 * customer sees only their own record: another user's id answers 404, exactly
 * as a missing one, and the list holds only them. An admin sees everyone.
 */
import { principalOf, type RequestContext } from '../pipeline/context.ts';
import { collectionHandler } from '../pipeline/collection.ts';
import { where } from '../db/page.ts';
import { userConditions } from '../auth/ownership.ts';
import { jsonResponse } from '../http/json.ts';
import type { ListSpec } from '../http/list-query.ts';
import { HttpError } from '../http/problem.ts';
import { validationError } from '../http/json-body.ts';
import { readJsonBody } from '../pipeline/body.ts';
import { NewUserSchema } from './rules.ts';
import { createUser, getUser, UserExistsError } from './store.ts';
import { userRepresentation, type UserRow } from './representation.ts';

type UserSortKey = 'id' | 'createdAt';
export const USER_LIST: ListSpec<UserSortKey, Record<string, never>> = {
  sortKeys: ['id', 'createdAt'],
  keyTypes: { id: 'bigint', createdAt: 'timestamptz' },
  filters: {},
};
const SORT_COLUMNS: Record<UserSortKey, string> = { id: 'id', createdAt: 'created_at' };

export const listUsers = collectionHandler({
  list: USER_LIST,
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

export async function getOne(ctx: RequestContext): Promise<Response> {
  const principal = principalOf(ctx);
  const id = ctx.params.id as number;
  const row = principal.role === 'admin' || principal.userId === id ? await getUser(ctx.db, id) : undefined;
  if (row === undefined) throw new HttpError(404, 'not-found', { detail: `There is no user ${id}.` });
  return jsonResponse(userRepresentation(row));
}

export async function create(ctx: RequestContext): Promise<Response> {
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
