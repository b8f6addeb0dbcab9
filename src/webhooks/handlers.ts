/**
 * The webhook endpoint handlers (contract §15), for admins with `webhooks:write`:
 * where events are POSTed, which types, and the signing secret (shown once);
 * and each endpoint's deliveries.
 */
import { randomBytes } from 'node:crypto';
import { principalOf, type RequestContext } from '../pipeline/context.ts';
import { collectionHandler } from '../pipeline/collection.ts';
import { where } from '../db/page.ts';
import { validationError } from '../http/json-body.ts';
import { readJsonBody } from '../pipeline/body.ts';
import { jsonResponse } from '../http/json.ts';
import type { ListSpec } from '../http/list-query.ts';
import { HttpError } from '../http/problem.ts';
import {
  deliveryRepresentation,
  endpointRepresentation,
  NewWebhookEndpointSchema,
  type EndpointRow,
} from './representation.ts';
import { checkTarget } from './rules.ts';

function adminOnly(ctx: RequestContext): void {
  if (principalOf(ctx).role !== 'admin')
    throw new HttpError(403, 'forbidden', { detail: 'Only an admin may manage webhook endpoints.' });
}

export async function create(ctx: RequestContext): Promise<Response> {
  adminOnly(ctx);
  const body = readJsonBody(ctx, NewWebhookEndpointSchema);
  const target = await checkTarget(body.url, ctx.services.config.webhookAllowPrivate);
  if (!target.ok) throw validationError([{ pointer: '/url', detail: target.problem }]);
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  // Stored in normal form (scheme and host lower-case, no stray white space).
  const row = await ctx.db.one('InsertWebhookEndpoint', [target.href, [...new Set(body.events)], secret]);
  // The only time the secret leaves the server.
  return jsonResponse({ ...endpointRepresentation(row), secret }, 201, { location: `${ctx.url.pathname}/${row.id}` });
}

export const ENDPOINT_LIST: ListSpec<'id' | 'createdAt', Record<string, never>> = {
  sortKeys: ['id', 'createdAt'],
  keyTypes: { id: 'bigint', createdAt: 'timestamptz' },
  filters: {},
};

export const list = collectionHandler({
  list: ENDPOINT_LIST,
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
  const row = await ctx.db.opt('GetWebhookEndpoint', [ctx.params.id as number]);
  if (row === undefined)
    throw new HttpError(404, 'not-found', { detail: `There is no webhook endpoint ${ctx.params.id}.` });
  return row;
}

export async function getOne(ctx: RequestContext): Promise<Response> {
  return jsonResponse(endpointRepresentation(await endpointOr404(ctx)));
}

export async function remove(ctx: RequestContext): Promise<Response> {
  adminOnly(ctx);
  const deleted = await ctx.db.opt('DeleteWebhookEndpoint', [ctx.params.id as number]);
  if (deleted === undefined)
    throw new HttpError(404, 'not-found', { detail: `There is no webhook endpoint ${ctx.params.id}.` });
  return new Response(null, { status: 204 });
}

export const DELIVERY_LIST: ListSpec<'id' | 'createdAt', Record<string, never>> = {
  sortKeys: ['id', 'createdAt'],
  keyTypes: { id: 'bigint', createdAt: 'timestamptz' },
  filters: {},
};

export const deliveries = collectionHandler({
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
