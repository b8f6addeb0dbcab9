/**
 * Webhook endpoints (contract §15), for admins with `webhooks:write`: where
 * events are POSTed, which types, and the signing secret (shown once).
 */
import { randomBytes } from 'node:crypto';
import { principalOf, type RequestContext, type RouteSpec } from '../pipeline/context.ts';
import { collectionHandler } from '../pipeline/collection.ts';
import { where } from '../db/page.ts';
import { validationError } from '../http/json-body.ts';
import { readJsonBody } from '../pipeline/body.ts';
import { jsonResponse } from '../http/json.ts';
import type { ListSpec } from '../http/list-query.ts';
import { HttpError } from '../http/problem.ts';
import { page } from '../openapi/atoms.ts';
import {
  DELIVERY,
  deliveryRepresentation,
  endpointRepresentation,
  NEW_WEBHOOK_ENDPOINT,
  NewWebhookEndpointSchema,
  WEBHOOK_ENDPOINT,
  WEBHOOK_ENDPOINT_WITH_SECRET,
  type EndpointRow,
} from './representation.ts';
import { checkTarget } from './targets.ts';

function adminOnly(ctx: RequestContext): void {
  if (principalOf(ctx).role !== 'admin')
    throw new HttpError(403, 'forbidden', { detail: 'Only an admin may manage webhook endpoints.' });
}

async function create(ctx: RequestContext): Promise<Response> {
  adminOnly(ctx);
  const body = readJsonBody(ctx, NewWebhookEndpointSchema);
  const target = await checkTarget(body.url, ctx.services.config.webhookAllowPrivate);
  if (!target.ok) throw validationError([{ pointer: '/url', detail: target.problem }]);
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  // Stored in normal form (scheme and host lower-case, no stray white space).
  const row = (await ctx.db.one<EndpointRow>('InsertWebhookEndpoint', [
    target.href,
    [...new Set(body.events)],
    secret,
  ])) as EndpointRow;
  // The only time the secret leaves the server.
  return jsonResponse({ ...endpointRepresentation(row), secret }, 201, { location: `${ctx.url.pathname}/${row.id}` });
}

const LIST: ListSpec<'id' | 'createdAt', Record<string, never>> = {
  sortKeys: ['id', 'createdAt'],
  keyTypes: { id: 'bigint', createdAt: 'timestamptz' },
  filters: {},
};

const list = collectionHandler({
  list: LIST,
  before: adminOnly,
  sql: () => ({
    list: 'ListWebhookEndpoints',
    count: 'CountWebhookEndpoints',
    columns: { id: 'id', createdAt: 'created_at' },
  }),
  represent: (row: EndpointRow) => endpointRepresentation(row),
});

async function endpointOr404(ctx: RequestContext): Promise<EndpointRow> {
  adminOnly(ctx);
  const row = await ctx.db.one<EndpointRow>('GetWebhookEndpoint', [ctx.params.id as number]);
  if (row === undefined)
    throw new HttpError(404, 'not-found', { detail: `There is no webhook endpoint ${ctx.params.id}.` });
  return row;
}

async function getOne(ctx: RequestContext): Promise<Response> {
  return jsonResponse(endpointRepresentation(await endpointOr404(ctx)));
}

async function remove(ctx: RequestContext): Promise<Response> {
  adminOnly(ctx);
  const deleted = await ctx.db.one('DeleteWebhookEndpoint', [ctx.params.id as number]);
  if (deleted === undefined)
    throw new HttpError(404, 'not-found', { detail: `There is no webhook endpoint ${ctx.params.id}.` });
  return new Response(null, { status: 204 });
}

const DELIVERY_LIST: ListSpec<'id' | 'createdAt', Record<string, never>> = {
  sortKeys: ['id', 'createdAt'],
  keyTypes: { id: 'bigint', createdAt: 'timestamptz' },
  filters: {},
};

const deliveries = collectionHandler({
  list: DELIVERY_LIST,
  before: endpointOr404,
  sql: (_ctx, _query, endpoint) => {
    const filter = where([{ sql: (p) => `d.endpoint_id = ${p}`, value: endpoint.id }]);
    return {
      list: 'ListDeliveries',
      count: 'CountDeliveries',
      where: filter.sql,
      params: filter.params,
      columns: { id: 'd.id', createdAt: 'd.created_at' },
    };
  },
  represent: deliveryRepresentation,
});

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
      list: LIST,
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
