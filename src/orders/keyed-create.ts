/**
 * A keyed `POST /orders` in one round trip (contract §7, issue 35): one
 * statement claims the key, creates the order and its items, records its
 * order.created event and stores the 201 answer, in its own transaction
 * (sql/migrations/0014_idempotent_create_order.sql). What it cannot do it
 * leaves to the ordinary path of the idempotency stage, which decides and
 * stores it as before: a body or a rule refused before the statement (the
 * schema, a duplicate product, an admin without a customer, a customer
 * naming another), and a refusal of the statement's own rules (an unknown
 * customer or product, currencies mixed, a total too large), after which it
 * wrote nothing. The answer it stores is the one the client gets: the
 * order's JSON text as the database builds it for a GET, its
 * `Content-Type` as the conditional stage will set it, its `Location` and
 * its `ETag` (test/api/keyed-create.test.ts compares them).
 */
import type { Db, RowOf } from '../db/database.ts';
import { HttpError } from '../http/problem.ts';
import { jsonTextResponse } from '../http/json.ts';
import { JSON_TYPE, type Version } from '../http/negotiation.ts';
import type { OneStatement, RequestContext } from '../pipeline/context.ts';
import { claimOf, type IdempotentRequest } from '../pipeline/idempotency.ts';
import { orderTag, orderTagSuffix } from './etag.ts';
import { orderToCreate } from './handlers.ts';
import type { Item } from './rules.ts';

/** `RouteSpec.keyedInOneStatement` of POST /orders. */
export async function createKeyed(ctx: RequestContext, request: IdempotentRequest): Promise<OneStatement | undefined> {
  let wanted: ReturnType<typeof orderToCreate>;
  try {
    wanted = orderToCreate(ctx);
  } catch (error) {
    // A refusal of the body or of a rule: the ordinary path decides it again, and stores it.
    if (error instanceof HttpError) return undefined;
    throw error;
  }
  const version = ctx.version;
  const contentType = ctx.contentType ?? JSON_TYPE;
  const location = `${ctx.url.pathname}/`;
  const row = await createOrderKeyed(ctx.db, {
    userId: request.principal.userId,
    key: request.key,
    fingerprint: request.fingerprint,
    customerId: wanted.customerId,
    checkCustomer: wanted.admin,
    items: wanted.items,
    version,
    contentType,
    location,
    tagSuffix: orderTagSuffix(version, contentType),
  });
  if (row.order_id !== null && row.order_body !== null) {
    const id = row.order_id;
    // The tag the statement stored, made as every order's is.
    const etag = orderTag(id, Number(row.order_revision), version, contentType);
    const body = row.order_body;
    return { respond: async () => jsonTextResponse(body, 201, { location: `${location}${id}`, etag }) };
  }
  if (row.fingerprint !== null || !row.locked) return { claim: claimOf(row) };
  return undefined;
}

/** What a keyed creation in one statement needs (CreateOrderKeyed); the answer's fields but the id. */
interface KeyedCreation {
  readonly userId: number;
  readonly key: string;
  readonly fingerprint: string;
  readonly customerId: number;
  readonly checkCustomer: boolean;
  readonly items: readonly Item[];
  readonly version: Version;
  readonly contentType: string;
  /** The Location of the answer, but the order's id. */
  readonly location: string;
  /** The ETag of the answer after the order's id and revision (src/orders/etag.ts). */
  readonly tagSuffix: string;
}

/** CreateOrderKeyed's row: the key's claim when it was used, NULLs when a rule refused, or the order made. */
type KeyedCreated = RowOf<'CreateOrderKeyed'>;

async function createOrderKeyed(db: Db, c: KeyedCreation): Promise<KeyedCreated> {
  return await db.one('CreateOrderKeyed', [
    c.userId,
    c.key,
    c.fingerprint,
    c.customerId,
    c.checkCustomer,
    c.items.map((i) => String(i.productId)),
    c.items.map((i) => String(i.qty)),
    c.version,
    c.contentType,
    c.location,
    c.tagSuffix,
  ]);
}
