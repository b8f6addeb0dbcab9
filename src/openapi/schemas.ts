/**
 * The response representations of SPEC §2 as valibot schemas, one per
 * version: they describe what the serializers produce, and the OpenAPI
 * document is generated from them and from the request schemas that
 * validate bodies. Strict objects: a member the document does not name
 * fails the contract tests.
 */
import * as v from 'valibot';
import { CreateOrderSchema, PatchOrderSchema, ReplaceOrderSchema, STATUSES, MAX_QTY } from '../orders/schema.ts';
import { PaymentV1Schema, PaymentV2Schema } from '../payments/payments.ts';
import { NewUserSchema } from '../users/user-store.ts';
import { EVENT_TYPES } from '../events/log.ts';
import { NewWebhookEndpointSchema } from '../webhooks/endpoints.ts';
import { MAX_PROBLEM_ERRORS } from '../http/problem.ts';

const Id = v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(Number.MAX_SAFE_INTEGER));
const Timestamp = v.pipe(v.string(), v.regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/), v.description('RFC 3339, UTC, with milliseconds'));
const Currency = v.pipe(v.string(), v.regex(/^[A-Z]{3}$/), v.description('ISO 4217 code'));
const MoneyNumber = v.pipe(v.number(), v.minValue(0), v.description('a decimal with at most 2 decimal places; parse it as a decimal, not a float'));
const Money = v.strictObject({
  amount: v.pipe(v.string(), v.regex(/^[0-9]+\.[0-9]{2}$/), v.description('a decimal string with 2 decimal places')),
  currency: Currency,
});

const ProductV1 = v.strictObject({ id: Id, sku: v.string(), name: v.string(), price: MoneyNumber, currency: Currency, createdAt: Timestamp });
const ProductV2 = v.strictObject({ id: Id, sku: v.string(), name: v.string(), price: Money, createdAt: Timestamp });
const User = v.strictObject({ id: Id, email: v.string(), name: v.string(), role: v.picklist(['customer', 'admin']), createdAt: Timestamp });
const Qty = v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_QTY));
const OrderItemV1 = v.strictObject({ id: Id, orderId: Id, productId: Id, qty: Qty, unitPrice: MoneyNumber });
const OrderItemV2 = v.strictObject({ id: Id, orderId: Id, productId: Id, qty: Qty, unitPrice: Money });
const Status = v.picklist(STATUSES);
const OrderV1 = v.strictObject({
  id: Id, customerId: Id, status: Status, currency: Currency, total: MoneyNumber,
  items: v.array(OrderItemV1), createdAt: Timestamp, updatedAt: Timestamp,
});
const OrderV2 = v.strictObject({
  id: Id, customerId: Id, status: Status, total: Money,
  items: v.array(OrderItemV2), createdAt: Timestamp, updatedAt: Timestamp,
});
const PaymentV1 = v.strictObject({ id: Id, orderId: Id, amount: MoneyNumber, currency: Currency, status: v.literal('succeeded'), createdAt: Timestamp });
const PaymentV2 = v.strictObject({ id: Id, orderId: Id, amount: Money, status: v.literal('succeeded'), createdAt: Timestamp });

const Meta = v.strictObject({
  total: v.pipe(v.number(), v.integer(), v.minValue(0)),
  page: v.pipe(v.number(), v.integer(), v.minValue(1)),
  pageSize: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100)),
  pageCount: v.pipe(v.number(), v.integer(), v.minValue(0)),
});
const envelope = <T extends v.GenericSchema>(item: T) => v.strictObject({ data: v.array(item), meta: Meta });

const Problem = v.strictObject({
  type: v.pipe(v.string(), v.regex(/^\/problems\/[a-z-]+$/)),
  title: v.string(),
  status: v.pipe(v.number(), v.integer(), v.minValue(400), v.maxValue(599)),
  detail: v.optional(v.string()),
  instance: v.string(),
  requestId: v.string(),
  errors: v.optional(v.pipe(
    v.array(v.union([
      v.strictObject({ pointer: v.pipe(v.string(), v.description('JSON Pointer (RFC 6901) into the request body')), detail: v.string() }),
      v.strictObject({ parameter: v.pipe(v.string(), v.description('a query parameter')), detail: v.string() }),
    ])),
    v.maxLength(MAX_PROBLEM_ERRORS),
    v.description(`each distinct error once, at most ${MAX_PROBLEM_ERRORS}; the detail says how many more there are`),
  )),
});

const Event = v.strictObject({
  id: Id,
  type: v.picklist(EVENT_TYPES),
  createdAt: Timestamp,
  data: v.pipe(v.unknown(), v.description('the resource\'s version 2 representation; for order.status_changed {"from", "to", "order"}')),
});
const EventPage = v.strictObject({
  data: v.array(Event),
  meta: v.strictObject({ pageSize: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100)), after: v.nullable(Id), next: v.nullable(Id) }),
});
const WebhookEndpoint = v.strictObject({ id: Id, url: v.string(), events: v.array(v.picklist(EVENT_TYPES)), createdAt: Timestamp });
const NewWebhookSecret = v.strictObject({
  id: Id, url: v.string(), events: v.array(v.picklist(EVENT_TYPES)), createdAt: Timestamp,
  secret: v.pipe(v.string(), v.regex(/^whsec_[A-Za-z0-9+/]+=*$/), v.description('shown once: keep it to verify signatures')),
});
const Delivery = v.strictObject({
  id: Id, eventId: Id, eventType: v.picklist(EVENT_TYPES), status: v.picklist(['pending', 'delivered', 'failed']),
  attempts: v.pipe(v.number(), v.integer(), v.minValue(0)), nextAttemptAt: v.nullable(Timestamp), createdAt: Timestamp,
  attemptLog: v.array(v.strictObject({ at: Timestamp, status: v.nullable(v.number()), error: v.nullable(v.string()), durationMs: v.number() })),
});

/** Every named schema of the document, by its name in `components.schemas`. */
export const SCHEMAS = {
  ProductV1, ProductV2, ProductPageV1: envelope(ProductV1), ProductPageV2: envelope(ProductV2),
  User, UserPage: envelope(User),
  OrderItemV1, OrderItemV2, OrderItemPageV1: envelope(OrderItemV1), OrderItemPageV2: envelope(OrderItemV2),
  OrderV1, OrderV2, OrderPageV1: envelope(OrderV1), OrderPageV2: envelope(OrderV2),
  PaymentV1, PaymentV2, PaymentPageV1: envelope(PaymentV1), PaymentPageV2: envelope(PaymentV2),
  Problem,
  Event, EventPage, WebhookEndpoint, WebhookEndpointWithSecret: NewWebhookSecret, WebhookEndpointPage: envelope(WebhookEndpoint),
  Delivery, DeliveryPage: envelope(Delivery),
  NewWebhookEndpoint: NewWebhookEndpointSchema,
  Health: v.strictObject({ status: v.literal('ok') }),
  Ready: v.strictObject({ status: v.literal('ready') }),
  OpenApiDocument: v.pipe(v.record(v.string(), v.unknown()), v.description('this document')),
  CreateOrder: CreateOrderSchema,
  ReplaceOrder: ReplaceOrderSchema,
  PatchOrder: PatchOrderSchema,
  NewUser: NewUserSchema,
  NewPaymentV1: PaymentV1Schema,
  NewPaymentV2: PaymentV2Schema,
} as const;

export type SchemaName = keyof typeof SCHEMAS;
