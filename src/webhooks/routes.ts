/** The webhook endpoints' endpoints (contract §15) as routes, each with the prose of its OpenAPI operation. */
import type { RouteSpec } from '../pipeline/context.ts';
import { page } from '../openapi/atoms.ts';
import { DELIVERY, NEW_WEBHOOK_ENDPOINT, WEBHOOK_ENDPOINT, WEBHOOK_ENDPOINT_WITH_SECRET } from './representation.ts';
import { create, DELIVERY_LIST, deliveries, ENDPOINT_LIST, getOne, list, remove } from './handlers.ts';
export const webhookRoutes: readonly RouteSpec[] = [
  {
    method: 'POST',
    pattern: '/webhook-endpoints',
    auth: 'webhooks:write',
    handler: create,
    doc: {
      summary: 'Create a webhook endpoint (admin); the signing secret is shown once',
      description:
        'Events of the listed types are delivered to url per Standard Webhooks (webhook-id, webhook-timestamp, ' +
        'webhook-signature), at least once, retried for about a day. The url must be http(s) and, unless ' +
        'WEBHOOK_ALLOW_PRIVATE=1, not a private or loopback address (422).',
      success: { status: 201, schema: WEBHOOK_ENDPOINT_WITH_SECRET },
      body: NEW_WEBHOOK_ENDPOINT,
      problems: [[422, 'validation']],
    },
  },
  {
    method: 'GET',
    pattern: '/webhook-endpoints',
    auth: 'webhooks:write',
    handler: list,
    doc: {
      summary: 'List webhook endpoints (admin)',
      description: 'Every webhook endpoint, a page at a time; the signing secrets are never shown again.',
      success: { status: 200, schema: page('WebhookEndpointPage', WEBHOOK_ENDPOINT) },
      list: ENDPOINT_LIST,
    },
  },
  {
    method: 'GET',
    pattern: '/webhook-endpoints/{id:int}',
    auth: 'webhooks:write',
    handler: getOne,
    doc: {
      summary: 'Get a webhook endpoint (admin)',
      description: 'One webhook endpoint, without its signing secret.',
      success: { status: 200, schema: WEBHOOK_ENDPOINT },
    },
  },
  {
    method: 'DELETE',
    pattern: '/webhook-endpoints/{id:int}',
    auth: 'webhooks:write',
    handler: remove,
    doc: {
      summary: 'Delete a webhook endpoint and its deliveries (admin)',
      description: 'No further deliveries are attempted to it; its pending and past deliveries are deleted with it.',
      success: { status: 204 },
    },
  },
  {
    method: 'GET',
    pattern: '/webhook-endpoints/{id:int}/deliveries',
    auth: 'webhooks:write',
    handler: deliveries,
    doc: {
      summary: "An endpoint's deliveries, with every attempt and its outcome (admin)",
      description:
        'Each delivery of an event to this endpoint: its status (pending, delivered or failed), the attempts ' +
        "made and when the next is due, and each attempt's HTTP status or error and duration.",
      success: { status: 200, schema: page('DeliveryPage', DELIVERY) },
      list: DELIVERY_LIST,
    },
  },
];
