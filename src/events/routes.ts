/** The event log's endpoint (contract §15) as a route, with the prose of its OpenAPI operation. */
import type { RouteSpec } from '../pipeline/context.ts';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../http/list-query.ts';
import { ID_SCHEMA, stringEnum } from '../openapi/atoms.ts';
import { EVENT_TYPES } from '../outbox/outbox.ts';
import { EVENT_PAGE } from './representation.ts';
import { listEvents } from './handlers.ts';

export const eventRoutes: readonly RouteSpec[] = [
  {
    method: 'GET',
    pattern: '/events',
    auth: 'events:read',
    handler: listEvents,
    doc: {
      summary: 'Read the event log',
      description:
        'Events in commit-safe order after the cursor `after` (an event id); follow meta.next (or Link ' +
        'rel="next") to read on. A customer sees the events of their own resources.',
      success: { status: 200, schema: EVENT_PAGE },
      query: {
        after: { description: 'the id of the last event read; omit to start at the oldest kept', schema: ID_SCHEMA },
        type: { description: 'only events of this type', schema: stringEnum(EVENT_TYPES) },
        pageSize: {
          description: 'events per page',
          schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE },
        },
      },
    },
  },
];
