/**
 * The payment handlers (contract §2, §4, §6, §7): a request in, an answer out.
 * `POST /payments` needs an Idempotency-Key; the payment commits with the
 * order's move to `paid` and with the stored idempotent result (store.ts).
 */
import { principalOf, type RequestContext } from '../pipeline/context.ts';
import { collectionHandler } from '../pipeline/collection.ts';
import { where } from '../db/page.ts';
import { jsonResponse } from '../http/json.ts';
import { positiveId, type ListSpec } from '../http/list-query.ts';
import { orderScopedConditions } from '../auth/ownership.ts';
import { paymentInput } from './rules.ts';
import { paymentRepresentation } from './representation.ts';
import { getPayment, recordPayment } from './store.ts';

export async function create(ctx: RequestContext): Promise<Response> {
  const row = await recordPayment(ctx.db, principalOf(ctx), paymentInput(ctx));
  return jsonResponse(paymentRepresentation(row, ctx.version), 201, { location: `${ctx.url.pathname}/${row.id}` });
}

export async function getOne(ctx: RequestContext): Promise<Response> {
  const row = await getPayment(ctx.db, ctx.params.id as number, principalOf(ctx));
  return jsonResponse(paymentRepresentation(row, ctx.version));
}

type PaymentSortKey = 'id' | 'createdAt';
export const PAYMENT_LIST: ListSpec<PaymentSortKey, { orderId: number }> = {
  sortKeys: ['id', 'createdAt'],
  keyTypes: { id: 'bigint', createdAt: 'timestamptz' },
  filters: { orderId: positiveId },
};
const SORT_COLUMNS: Record<PaymentSortKey, string> = { id: 'p.id', createdAt: 'p.created_at' };

export const list = collectionHandler({
  list: PAYMENT_LIST,
  sql: (ctx, query) => {
    const filter = where(orderScopedConditions(principalOf(ctx), query.filters.orderId, 'p.order_id'));
    return {
      list: 'ListPayments',
      count: 'CountPayments',
      where: filter.sql,
      params: filter.params,
      columns: SORT_COLUMNS,
    };
  },
  represent: paymentRepresentation,
});
