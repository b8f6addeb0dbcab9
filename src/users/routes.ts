/**
 * The user endpoints (contract §4) as routes, each with the prose of its
 * OpenAPI operation; the handlers are in handlers.ts.
 */
import type { RouteSpec } from '../pipeline/context.ts';
import { NEW_USER } from './rules.ts';
import { USER, USER_PAGE } from './representation.ts';
import { create, getOne, listUsers, USER_LIST } from './handlers.ts';

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
      list: USER_LIST,
    },
  },
  {
    method: 'GET',
    pattern: '/users/{id:int}',
    auth: 'users:read',
    handler: getOne,
    doc: {
      summary: 'Get a user',
      description:
        "An admin may read any user; a customer only themselves: another user's id answers 404, exactly as a " +
        'missing one.',
      success: { status: 200, schema: USER },
    },
  },
];
