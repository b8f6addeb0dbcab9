/**
 * The event log (contract §15): every committed change to an order, payment or
 * user writes an event in the transaction of the change, so a change that
 * rolls back leaves none and a committed one always has its event.
 */
import * as v from 'valibot';
import type { Tx } from '../db/database.ts';
import { documented, Id, named, Timestamp } from '../openapi/atoms.ts';
import type { NamedSchema } from '../openapi/types.ts';
import { ORDER } from '../orders/representation.ts';
import { STATUSES } from '../orders/schema.ts';
import { PAYMENT } from '../payments/representation.ts';
import { USER } from '../users/representation.ts';

export const EVENT_TYPES = [
  'order.created',
  'order.updated',
  'order.status_changed',
  'order.deleted',
  'payment.succeeded',
  'user.created',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Writes an event (and its pending webhook deliveries) with `tx`, the change's own transaction. */
export async function recordEvent(db: Tx, type: EventType, customerId: number | null, data: unknown): Promise<void> {
  await db.one('InsertEvent', [type, customerId, JSON.stringify(data)]);
}

export interface EventRow {
  id: number;
  type: EventType;
  data: unknown;
  created_at: Date;
}

/** `{"id", "type", "createdAt", "data"}`: in `GET /events` and in every webhook body. */
export function eventRepresentation(row: EventRow) {
  return { id: row.id, type: row.type, createdAt: row.created_at, data: row.data };
}

/** `order.status_changed`'s data: the status before and after, and the order after the change. */
const STATUS_CHANGE = named(
  'OrderStatusChange',
  v.strictObject({ from: v.picklist(STATUSES), to: v.picklist(STATUSES), order: ORDER.v2.schema }),
  [ORDER.v2],
);

/** Each event type's `data`: the resource's version 2 representation (docs/events.md). */
const DATA: Readonly<Record<EventType, NamedSchema>> = {
  'order.created': ORDER.v2,
  'order.updated': ORDER.v2,
  'order.status_changed': STATUS_CHANGE,
  'order.deleted': ORDER.v2,
  'payment.succeeded': PAYMENT.v2,
  'user.created': USER,
};

/** `order.status_changed` → `OrderStatusChangedEvent`. */
const eventName = (type: EventType): string =>
  `${type.replace(/(^|[._])([a-z])/g, (_, _separator: string, letter: string) => letter.toUpperCase())}Event`;

/** One event type's events, its `type` a constant and its `data` typed. */
const eventSchema = (type: EventType) =>
  v.strictObject({ id: Id, type: v.literal(type), createdAt: Timestamp, data: DATA[type].schema });
const EVENT_SCHEMAS = EVENT_TYPES.map(eventSchema);
const EVENT_VARIANT = v.variant('type', EVENT_SCHEMAS);
const EVENTS = EVENT_TYPES.map((type, i) => named(eventName(type), EVENT_SCHEMAS[i] as v.GenericSchema, [DATA[type]]));

/** The schema of `eventRepresentation()`: one of the event types', told apart by `type` (an OpenAPI discriminator). */
export const EVENT = named(
  'Event',
  v.pipe(
    EVENT_VARIANT,
    documented<v.InferOutput<typeof EVENT_VARIANT>>({
      discriminator: {
        propertyName: 'type',
        mapping: Object.fromEntries(EVENT_TYPES.map((type, i) => [type, `#/components/schemas/${EVENTS[i]?.name}`])),
      },
    }),
  ),
  EVENTS,
);
