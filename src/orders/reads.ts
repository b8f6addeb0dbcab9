/**
 * Reading orders (contract §4, §6, §9): one order as `principal` may see it,
 * as a row, as the JSON text the database builds, or only its revision; an
 * order the principal may not see is as missing as an unknown one (404). The
 * statements are those of `sql/queries/orders.sql`.
 */
import type { Principal } from '../auth/authenticator.ts';
import type { Db } from '../db/database.ts';
import { ownerLimit } from '../auth/ownership.ts';
import { HttpError } from '../http/problem.ts';
import type { Version } from '../http/negotiation.ts';
import type { OrderRow } from './representation.ts';

export function notFound(id: number): HttpError {
  return new HttpError(404, 'not-found', { detail: `There is no order ${id}.` });
}

/** An order as stored: the row of its representation, and its revision (contract §9). */
export interface StoredOrder extends OrderRow {
  /** Grows with every change to the order or its items (sql/migrations/0008_order_revision.sql). */
  revision: number;
}

export async function getOrder(db: Db, id: number, principal: Principal): Promise<StoredOrder> {
  const row = await db.one<StoredOrder>('GetOrder', [id, ownerLimit(principal)]);
  if (row === undefined) throw notFound(id);
  return row;
}

/**
 * Order `id` as `principal` may see it, as API `version`'s JSON text (built by the database) with its revision; 404
 * like `getOrder`.
 */
export async function getOrderJson(
  db: Db,
  id: number,
  principal: Principal,
  version: Version,
): Promise<{ revision: number; body: string }> {
  type Row = { revision: number; body: string };
  const params = [id, ownerLimit(principal)];
  // One statement per version: a CASE on the version would set up both versions' subqueries on every run.
  const row = await (version === 1 ? db.one<Row>('GetOrderJson', params) : db.one<Row>('GetOrderJsonV2', params));
  if (row === undefined) throw notFound(id);
  return row;
}

/** The revision of order `id` as `principal` may see it (one primary-key lookup); 404 like `getOrder`. */
export async function getOrderRevision(db: Db, id: number, principal: Principal): Promise<number> {
  const row = await db.one<{ revision: number }>('GetOrderRevision', [id, ownerLimit(principal)]);
  if (row === undefined) throw notFound(id);
  return row.revision;
}
