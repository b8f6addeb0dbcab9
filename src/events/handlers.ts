/**
 * The handler of `GET /events` (contract §15): the log read with an `after` cursor, in commit-safe
 * order: (transaction id, event id), and only events of transactions older
 * than the oldest one still running, so a reader never skips an event that
 * commits late (docs/events.md). Customers see only their own resources'.
 */
import { principalOf, type RequestContext } from '../pipeline/context.ts';
import { jsonResponse } from '../http/json.ts';
import {
  DEFAULT_PAGE_SIZE,
  invalidQuery,
  MAX_PAGE_SIZE,
  positiveId,
  positiveInteger,
  type FilterParser,
  type QueryError,
} from '../http/list-query.ts';
import { ownerLimit } from '../auth/ownership.ts';
import { EVENT_TYPES, eventRepresentation, type EventType } from '../outbox/outbox.ts';

const type: FilterParser<EventType> = (value) =>
  (EVENT_TYPES as readonly string[]).includes(value)
    ? { value: value as EventType }
    : { error: `must be one of ${EVENT_TYPES.join(', ')}` };

const PARAMETERS: Readonly<Record<string, FilterParser<number | EventType>>> = {
  after: positiveId,
  type,
  pageSize: (value) => {
    const n = positiveInteger(value, MAX_PAGE_SIZE);
    return n === undefined ? { error: `must be an integer from 1 to ${MAX_PAGE_SIZE}` } : { value: n };
  },
};

/** contract §4's strictness for the cursor parameters: unknown, repeated or unparsable is a 400 naming it. */
function eventQuery(search: URLSearchParams): { after?: number; type?: EventType; pageSize: number } {
  const errors: QueryError[] = [];
  const values: Record<string, number | EventType> = {};
  for (const [name, value] of search) {
    const parse = Object.hasOwn(PARAMETERS, name) ? PARAMETERS[name] : undefined;
    if (parse === undefined)
      errors.push({ parameter: name, detail: 'is not a parameter of this collection; use after, type, pageSize' });
    else if (name in values || errors.some((e) => e.parameter === name))
      errors.push({ parameter: name, detail: 'must be given once' });
    else {
      const parsed = parse(value);
      if ('error' in parsed) errors.push({ parameter: name, detail: parsed.error });
      else values[name] = parsed.value;
    }
  }
  if (errors.length > 0) throw invalidQuery(errors);
  return {
    ...(values.after === undefined ? {} : { after: values.after as number }),
    ...(values.type === undefined ? {} : { type: values.type as EventType }),
    pageSize: (values.pageSize as number | undefined) ?? DEFAULT_PAGE_SIZE,
  };
}

export async function listEvents(ctx: RequestContext): Promise<Response> {
  const owner = ownerLimit(principalOf(ctx));
  const query = eventQuery(ctx.url.searchParams);
  const { after, type: only, pageSize } = query;
  let position = { xid: '0', id: 0 };
  if (after !== undefined) {
    const found = await ctx.db.opt('FindEventPosition', [after, owner]);
    if (found === undefined)
      throw invalidQuery([{ parameter: 'after', detail: `names no event (${after}) of yours that is still kept` }]);
    position = found;
  }
  const rows =
    owner === null
      ? await ctx.db.many('ListEvents', [position.xid, position.id, only ?? null, pageSize])
      : await ctx.db.many('ListCustomerEvents', [position.xid, position.id, only ?? null, pageSize, owner]);
  const last = rows.at(-1)?.id ?? after ?? null;
  const next = new URLSearchParams(ctx.url.search);
  if (last !== null) next.set('after', String(last));
  return jsonResponse(
    { data: rows.map(eventRepresentation), meta: { pageSize, after: after ?? null, next: last } },
    200,
    { link: `<${ctx.url.pathname}?${next.toString()}>; rel="next"` },
  );
}
