/**
 * The currency of an order's items (contract §4): every item names a known
 * product, and all share one currency, or the order is refused with 422 and a
 * JSON Pointer per item at fault.
 */
import type { Db } from '../db/database.ts';
import { DomainError, type Misplaced } from '../base/domain-error.ts';
import type { Item } from './rules.ts';

/**
 * The currency of an order's items, given each item's product's currency
 * (`null`: no such product), in the items' order: the first known one, if
 * every item is known and shares it; else 422 with a pointer per item at fault.
 */
export function currencyOfItems(items: readonly Item[], currencies: readonly (string | null)[]): string {
  const errors: Misplaced[] = [];
  let currency: string | undefined;
  items.forEach((item, index) => {
    const found = currencies[index] ?? null;
    if (found === null) {
      errors.push({ pointer: `/items/${index}/productId`, detail: `there is no product ${item.productId}` });
    } else if (currency === undefined) {
      currency = found;
    } else if (found !== currency) {
      errors.push({
        pointer: `/items/${index}/productId`,
        detail: `is priced in ${found}, the order's other items in ${currency}; an order has one currency`,
      });
    }
  });
  if (errors.length > 0) throw new DomainError('validation', errors);
  return currency as string;
}

/**
 * Checks that every item names a known product and that all share one
 * currency; returns that currency, or throws 422 with a pointer per item.
 */
export async function currencyOf(db: Db, items: readonly Item[]): Promise<string> {
  const products = new Map(
    (await db.many('FindProducts', [items.map((i) => String(i.productId))])).map((p) => [p.id, p.currency]),
  );
  return currencyOfItems(
    items,
    items.map((item) => products.get(item.productId) ?? null),
  );
}
