/**
 * Webhook endpoints and their deliveries as the API represents them
 * (contract §15), the request body that creates an endpoint, and their
 * schemas in the OpenAPI document.
 */
import * as v from 'valibot';
import { EVENT_TYPES } from '../outbox/outbox.ts';
import { documented, Id, named, Timestamp } from '../openapi/atoms.ts';

/** The body of `POST /webhook-endpoints`. */
export const NewWebhookEndpointSchema = v.strictObject({
  url: v.pipe(
    v.string('must be an http or https URL'),
    v.maxLength(2048, 'must be at most 2048 characters'),
    documented<string>({ format: 'uri' }),
  ),
  events: v.pipe(
    v.array(v.picklist(EVENT_TYPES, `must be one of ${EVENT_TYPES.join(', ')}`), 'must be an array of event types'),
    v.minLength(1, 'must name at least one event type'),
    v.maxLength(EVENT_TYPES.length, `must name at most ${EVENT_TYPES.length} event types`),
  ),
});

export interface EndpointRow {
  id: number;
  url: string;
  events: string[];
  created_at: Date;
  secret?: string;
}
export interface DeliveryRow {
  id: number;
  event_id: number;
  event_type: string;
  status: string;
  attempts: number;
  next_attempt_at: Date;
  created_at: Date;
  /** JSON the statement builds (`{at, status, error, durationMs}` per attempt): PostgreSQL describes it as json. */
  attempt_log: unknown;
}

type AttemptJson = { at: string; status: number | null; error: string | null; durationMs: number };

/** An endpoint as the API shows it, without its secret (the answer to its creation adds it). */
export const endpointRepresentation = (row: EndpointRow) => ({
  id: row.id,
  url: row.url,
  events: row.events,
  createdAt: row.created_at,
});

/** The schema of `endpointRepresentation()`. */
export const WEBHOOK_ENDPOINT = named(
  'WebhookEndpoint',
  v.strictObject({
    id: Id,
    url: v.pipe(v.string(), documented<string>({ format: 'uri' })),
    events: v.array(v.picklist(EVENT_TYPES)),
    createdAt: Timestamp,
  }),
);
/** The endpoint with its signing secret: the answer to its creation only. */
export const WEBHOOK_ENDPOINT_WITH_SECRET = named(
  'WebhookEndpointWithSecret',
  v.strictObject({
    id: Id,
    url: v.pipe(v.string(), documented<string>({ format: 'uri' })),
    events: v.array(v.picklist(EVENT_TYPES)),
    createdAt: Timestamp,
    secret: v.pipe(
      v.string(),
      v.regex(/^whsec_[A-Za-z0-9+/]+=*$/),
      v.description('shown once: keep it to verify signatures'),
    ),
  }),
);
export const NEW_WEBHOOK_ENDPOINT = named('NewWebhookEndpoint', NewWebhookEndpointSchema);

/** A delivery as `GET /webhook-endpoints/{id}/deliveries` shows it. */
export function deliveryRepresentation(row: DeliveryRow) {
  return {
    id: row.id,
    eventId: row.event_id,
    eventType: row.event_type,
    status: row.status,
    attempts: row.attempts,
    nextAttemptAt: row.status === 'pending' ? row.next_attempt_at : null,
    createdAt: row.created_at,
    attemptLog: (row.attempt_log as AttemptJson[]).map((a) => ({ ...a, at: new Date(a.at) })),
  };
}

/** The schema of `deliveryRepresentation()`. */
export const DELIVERY = named(
  'Delivery',
  v.strictObject({
    id: Id,
    eventId: Id,
    eventType: v.picklist(EVENT_TYPES),
    status: v.picklist(['pending', 'delivered', 'failed']),
    attempts: v.pipe(v.number(), v.integer(), v.minValue(0)),
    nextAttemptAt: v.nullable(Timestamp),
    createdAt: Timestamp,
    attemptLog: v.array(
      v.strictObject({
        at: Timestamp,
        status: v.nullable(v.number()),
        error: v.nullable(v.string()),
        durationMs: v.number(),
      }),
    ),
  }),
);
