/**
 * The event log (contract §15): every committed change to an order, payment or
 * user writes an event in the transaction of the change, so a change that
 * rolls back leaves none and a committed one always has its event. Below the
 * features that write events (orders, payments, users) and those that read
 * them (src/events/, src/webhooks/): it imports none of them. What each
 * event's `data` is, is src/events/representation.ts's.
 */
import type { Tx } from '../db/database.ts';

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
