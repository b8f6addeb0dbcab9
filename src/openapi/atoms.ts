/**
 * The building blocks of the schemas (contract §2, §5): `named()` and `page()`, which put a schema in
 * `components.schemas`, and the atoms every resource shares. A resource's own schemas live in its feature folder.
 */
import * as v from 'valibot';
import type { Version } from '../http/negotiation.ts';
import { MAX_PAGE_SIZE } from '../http/list-query.ts';
import { MAX_PROBLEM_ERRORS } from '../http/problem.ts';
import type { NamedSchema } from './types.ts';

/** `schema` under `name` in `components.schemas`; `refs`, the named schemas inside it, are shown as `$ref`s. */
export function named(name: string, schema: v.GenericSchema, refs: readonly NamedSchema[] = []): NamedSchema {
  return { name, schema, refs };
}

/** A positive integer id within 2^53−1, the rule of every id; `what` names it in the messages of a request body. */
export function idOf(what?: string) {
  const message = what === undefined ? undefined : `must be a ${what} id (a positive integer)`;
  return v.pipe(v.number(message), v.safeInteger(message), v.minValue(1, message));
}

/** An id in a response. */
export const Id = idOf();
/** An id as a JSON Schema, for query parameters and path segments: the rule of `Id`. */
export const ID_SCHEMA = { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER } as const;

/** Keywords for the document only (a `format`, the `maxLength` a pattern implies): an action that validates nothing. */
export function documented<T>(keywords: Readonly<Record<string, unknown>>) {
  return v.metadata<T, Readonly<Record<string, unknown>>>(keywords);
}

/**
 * A string that is one of `values`, as a JSON Schema. The `enum` bounds it: no `maxLength` beside it (orval's zod
 * output cannot apply one to an enum).
 */
export function stringEnum(values: readonly string[]) {
  return { type: 'string', enum: [...values] } as const;
}

export const Timestamp = v.pipe(
  v.string(),
  v.regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
  documented<string>({ format: 'date-time' }),
  v.description('RFC 3339, UTC, with milliseconds'),
);
export const Currency = v.pipe(v.string(), v.regex(/^[A-Z]{3}$/), v.description('ISO 4217 code'));

/** Version 1 money: a JSON number, with the currency in a member of its own. */
export const MoneyNumber = v.pipe(
  v.number(),
  v.minValue(0),
  v.description('a decimal with at most 2 decimal places; parse it as a decimal, not a float'),
);
/** Version 2 money: the decimal string and its currency. */
export const Money = v.strictObject({
  amount: v.pipe(v.string(), v.regex(/^[0-9]+\.[0-9]{2}$/), v.description('a decimal string with 2 decimal places')),
  currency: Currency,
});

export interface MoneyJson {
  readonly amount: string;
  readonly currency: string;
}

/** An amount as `version` represents it: version 1 a JSON number ("59.90" is 59.9), version 2 `Money`. */
export function money<V extends Version>(
  amount: string,
  currency: string,
  version: V,
): V extends 1 ? number : MoneyJson;
export function money(amount: string, currency: string, version: Version): number | MoneyJson {
  return version === 1 ? Number(amount) : { amount, currency };
}

/** The `meta` of a collection page (contract §4): `page` on every page, `next` unless on the last. */
export const Meta = v.strictObject({
  total: v.pipe(v.number(), v.integer(), v.minValue(0)),
  page: v.pipe(
    v.number(),
    v.integer(),
    v.minValue(1),
    v.description('The page number: the one asked for, or on a page reached by cursor the one its cursor leads to.'),
  ),
  pageSize: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_PAGE_SIZE)),
  pageCount: v.pipe(v.number(), v.integer(), v.minValue(0)),
  next: v.optional(
    v.pipe(
      v.string(),
      v.description(
        'The next page, as a relative URL: this request with cursor= (and no page), as in the Link rel="next". ' +
          'Absent on the last page.',
      ),
    ),
  ),
});

/** A page of a collection of `item`: `{"data": [...], "meta": {...}}`, under `name`. */
export function page(name: string, item: NamedSchema): NamedSchema {
  return named(name, v.strictObject({ data: v.array(item.schema), meta: Meta }), [item]);
}

/** The problem details of every refusal (RFC 9457). */
export const Problem = named(
  'Problem',
  v.strictObject({
    type: v.pipe(v.string(), v.regex(/^\/problems\/[a-z-]+$/)),
    title: v.string(),
    status: v.pipe(v.number(), v.integer(), v.minValue(400), v.maxValue(599)),
    detail: v.optional(v.string()),
    instance: v.string(),
    requestId: v.string(),
    errors: v.optional(
      v.pipe(
        v.array(
          v.union([
            v.strictObject({
              pointer: v.pipe(v.string(), v.description('JSON Pointer (RFC 6901) into the request body')),
              detail: v.string(),
            }),
            v.strictObject({ parameter: v.pipe(v.string(), v.description('a query parameter')), detail: v.string() }),
          ]),
        ),
        v.maxLength(MAX_PROBLEM_ERRORS),
        v.description(
          `each distinct error once, at most ${MAX_PROBLEM_ERRORS}; the detail says how many more there are`,
        ),
      ),
    ),
  }),
);
