/**
 * The generation of an order's representation, found rather than kept by
 * hand (contract §9). An order's tag stands for bytes derived from its
 * revision, not hashed from them: when the representation of an unchanged
 * order changes, its tag must change too, so that no cache revalidates the
 * old bytes. The representation is defined twice, by the SQL functions that
 * build it as JSON text in the database (order_json_v1 and order_json_v2, made
 * by a migration and replaced only by a later one) and by
 * `orderRepresentation()` over rows whose items order_items_json builds; the
 * generation is a hash of both: the text of every migration that defines one
 * of those functions (or alters their money_v2), its `--` comments left out
 * and its runs of blanks made one, and what the serializer makes of sample
 * orders in each version. A change of either changes it by itself. It is found
 * once, on first use (the server asks at start), not when this module loads.
 * (test/api/order-json.test.ts checks, on both databases, that the two give the
 * same bytes.)
 */
import { createHash } from 'node:crypto';
import { type Migration, readMigrations } from '../db/migrate.ts';
import { orderRepresentation, type OrderRow } from './representation.ts';

/** A migration that makes (or replaces) a function building an order's JSON or its items', or alters its money. */
const DEFINES_ORDER_JSON = /\bCREATE\s+(OR\s+REPLACE\s+)?FUNCTION\s+order_(json_v\d|items_json)\b|\bTYPE\s+money_v2\b/i;

/** Orders whose representations stand for the serializer's: with items and without, in two states. */
export const SAMPLES: readonly OrderRow[] = [
  {
    id: 7,
    customer_id: 3,
    status: 'pending',
    currency: 'EUR',
    total: '49.90',
    created_at: new Date('2026-11-22T06:43:00.123Z'),
    updated_at: new Date('2026-11-22T06:44:00.456Z'),
    items: [
      { id: 11, orderId: 7, productId: 1, qty: 2, unitPrice: '12.50' },
      { id: 12, orderId: 7, productId: 2, qty: 1, unitPrice: '24.90' },
    ],
  },
  {
    id: 9007199254740991,
    customer_id: 1,
    status: 'cancelled',
    currency: 'JPY',
    total: '0.00',
    created_at: new Date('2026-01-01T00:00:00.000Z'),
    updated_at: new Date('2026-01-01T00:00:00.000Z'),
    items: [],
  },
];

/** The text of an SQL statement without its `--` comments (the files' only kind) and with its blanks collapsed. */
export function essentialSql(text: string): string {
  return text
    .replace(/--[^\n]*/g, '')
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * The generation of a representation defined by `definition` (its parts, in order): 7 characters of base 36
 * from its SHA-256, the same for the same definition in every process and every release.
 */
export function generationOf(definition: readonly string[]): string {
  const digest = createHash('sha256').update(definition.join('\n'), 'utf8').digest();
  return digest.readUInt32BE(0).toString(36).padStart(7, '0').slice(0, 7);
}

/** Whether `migration` makes (or replaces) a function that builds an order's JSON text. */
export function definesOrderJson(migration: Migration): boolean {
  return DEFINES_ORDER_JSON.test(migration.text);
}

/**
 * The definition of an order's representation in `migrations`: the essential text of each migration that defines
 * a function building an order's JSON, in their order, then the samples' bytes in each version.
 */
export function orderDefinition(migrations: readonly Migration[] = readMigrations()): string[] {
  const defining = migrations.filter(definesOrderJson);
  if (defining.length === 0) throw new Error('no migration defines order_json_v1 or order_json_v2');
  return [
    ...defining.map((m) => essentialSql(m.text)),
    ...SAMPLES.flatMap((row) => [1, 2].map((version) => JSON.stringify(orderRepresentation(row, version as 1 | 2)))),
  ];
}

let found: string | undefined;

/** The generation of an order's representation, part of its tag (src/orders/etag.ts): found on first use. */
export function orderFormat(): string {
  found ??= generationOf(orderDefinition());
  return found;
}
