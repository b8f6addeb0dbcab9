/**
 * The events' schemas (contract §15) for the OpenAPI document: each event
 * type's `data` is the version 2 representation of its resource
 * (docs/events.md), one schema per type, told apart by `type`.
 */
import * as v from 'valibot';
import { MAX_PAGE_SIZE } from '../http/list-query.ts';
import { documented, Id, named, Timestamp } from '../openapi/atoms.ts';
import type { NamedSchema } from '../openapi/types.ts';
import { ORDER } from '../orders/representation.ts';
import { STATUSES } from '../orders/rules.ts';
import { PAYMENT } from '../payments/representation.ts';
import { USER } from '../users/representation.ts';
import { EVENT_TYPES, type EventType } from '../outbox/outbox.ts';

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

/** A page of the log as `listEvents()` answers it: a cursor page, not a numbered one. */
export const EVENT_PAGE = named(
  'EventPage',
  v.strictObject({
    data: v.array(EVENT.schema),
    meta: v.strictObject({
      pageSize: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_PAGE_SIZE)),
      after: v.nullable(Id),
      next: v.nullable(Id),
    }),
  }),
  [EVENT],
);
