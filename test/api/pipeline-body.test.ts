/**
 * readJsonBody() (src/pipeline/body.ts) on a hand-built RequestContext, no
 * server: the order of its checks (contract §8 media type 415, then JSON 400,
 * then 422) and the exact outcome of each, for the six handlers that use it.
 */
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import type { GenericSchema } from 'valibot';
import type { Db } from '../../src/db/database.ts';
import { ACCEPT_PATCH } from '../../src/http/json-body.ts';
import { NO_CONDITIONS } from '../../src/http/conditional.ts';
import { fieldOf, IncomingRequest } from '../../src/http/incoming-request.ts';
import { HttpError, type ProblemError } from '../../src/http/problem.ts';
import { readJsonBody, type ReadJsonBodyOptions } from '../../src/pipeline/body.ts';
import type { HandlerServices, RequestContext } from '../../src/pipeline/context.ts';
import { CreateOrderSchema, nullMembers, PatchOrderSchema } from '../../src/orders/rules.ts';
import { PaymentV1Schema, PaymentV2Schema } from '../../src/payments/rules.ts';

const PATCH: ReadJsonBodyOptions = { patch: true, refuse: nullMembers };
const V1 = 'application/vnd.orders.v1+json';
const V2 = 'application/vnd.orders.v2+json';
const MERGE = 'application/merge-patch+json';
const ITEMS = '"items":[{"productId":1,"qty":2}]';
const V2_PAYMENT = '{"orderId":7,"amount":{"amount":"59.90","currency":"EUR"}}';

/** A context with just what readJsonBody reads: the request's fields, the body and the version. */
function contextOf(request: Request, body: string, version: 1 | 2): RequestContext {
  return {
    request,
    header: (name) => fieldOf(request, name),
    conditions: NO_CONDITIONS,
    url: new URL(request.url),
    params: {},
    version,
    contentType: 'application/json',
    requestId: 'test',
    body: new TextEncoder().encode(body),
    principal: undefined,
    services: {} as HandlerServices,
    db: {} as Db,
  };
}

function webRequest(contentTypes: readonly string[]): Request {
  const headers = new Headers();
  for (const value of contentTypes) headers.append('content-type', value);
  // No body here (one would add its own Content-Type): readJsonBody reads `ctx.body`.
  return new Request('http://localhost/orders', { method: 'POST', headers });
}

/** The node adapter's lazy request, whose fields `fieldOf()` reads without building Headers. */
function nodeRequest(contentTypes: readonly string[]): Request {
  const rawHeaders = contentTypes.flatMap((value) => ['Content-Type', value]);
  const req = { method: 'POST', rawHeaders } as unknown as IncomingMessage;
  return new IncomingRequest(req, '/orders') as unknown as Request;
}

interface Refusal {
  readonly status: number;
  readonly slug: string;
  readonly detail?: string;
  /** The `errors` pointers, in order; absent when the problem lists none. */
  readonly pointers?: readonly string[];
  readonly acceptPatch?: true;
}

interface Row {
  readonly what: string;
  /** The Content-Type lines as sent: none, one, or a repeated field. */
  readonly type: readonly string[];
  readonly body: string;
  readonly schema: GenericSchema;
  readonly version?: 1 | 2;
  readonly options?: ReadJsonBodyOptions;
  readonly outcome: { readonly value: unknown } | Refusal;
}

const UNKNOWN_TOTAL: Refusal = {
  status: 422,
  slug: 'validation',
  detail: 'The request body is invalid at /total.',
  pointers: ['/total'],
};
const NOT_AN_OBJECT: Refusal = {
  status: 422,
  slug: 'validation',
  detail: 'The request body must be a JSON object, not an array.',
  pointers: [''],
};

const ROWS: readonly Row[] = [
  // The value, when every check passes.
  {
    what: 'an order to create',
    type: ['application/json'],
    body: `{${ITEMS}}`,
    schema: CreateOrderSchema,
    outcome: { value: { items: [{ productId: 1, qty: 2 }] } },
  },
  {
    what: 'the vendor type of the version served',
    type: [`${V2}; charset=UTF-8`],
    body: `{${ITEMS}}`,
    schema: CreateOrderSchema,
    version: 2,
    outcome: { value: { items: [{ productId: 1, qty: 2 }] } },
  },
  {
    what: 'a merge patch',
    type: [MERGE],
    body: '{"status":"paid"}',
    schema: PatchOrderSchema,
    options: PATCH,
    outcome: { value: { status: 'paid' } },
  },
  {
    what: 'a v1 payment',
    type: [V1],
    body: '{"orderId":7,"amount":59.9,"currency":"EUR"}',
    schema: PaymentV1Schema,
    outcome: { value: { orderId: 7, amount: 59.9, currency: 'EUR' } },
  },
  {
    what: 'a v2 payment',
    type: ['application/json'],
    body: V2_PAYMENT,
    schema: PaymentV2Schema,
    version: 2,
    outcome: { value: { orderId: 7, amount: { amount: '59.90', currency: 'EUR' } } },
  },
  // 415: the media type, before the body is looked at (the bodies below are not even JSON).
  {
    what: 'no Content-Type',
    type: [],
    body: '{',
    schema: CreateOrderSchema,
    outcome: {
      status: 415,
      slug: 'unsupported-media-type',
      detail: 'The request body needs Content-Type: application/json.',
    },
  },
  {
    what: 'text/plain',
    type: ['text/plain'],
    body: '{',
    schema: CreateOrderSchema,
    outcome: {
      status: 415,
      slug: 'unsupported-media-type',
      detail: 'Content-Type text/plain is not supported here; send application/json.',
    },
  },
  {
    what: 'a charset other than UTF-8',
    type: ['application/json; charset=latin1'],
    body: '{',
    schema: CreateOrderSchema,
    outcome: { status: 415, slug: 'unsupported-media-type', detail: 'JSON bodies must be UTF-8.' },
  },
  {
    what: 'a repeated Content-Type field',
    type: ['application/json', 'application/json'],
    body: '{',
    schema: CreateOrderSchema,
    outcome: {
      status: 415,
      slug: 'unsupported-media-type',
      detail: 'Content-Type application/json, application/json is not supported here; send application/json.',
    },
  },
  {
    what: "the other version's vendor type",
    type: [V2],
    body: '{',
    schema: CreateOrderSchema,
    version: 1,
    outcome: {
      status: 415,
      slug: 'unsupported-media-type',
      detail: `Content-Type ${V2} is a version 2 body, but the request is served in version 1.`,
    },
  },
  {
    what: 'a merge patch outside PATCH',
    type: [MERGE],
    body: '{}',
    schema: CreateOrderSchema,
    outcome: {
      status: 415,
      slug: 'unsupported-media-type',
      detail: `Content-Type ${MERGE} is not supported here; send application/json.`,
    },
  },
  {
    what: 'a PATCH with text/plain',
    type: ['text/plain'],
    body: '{',
    schema: PatchOrderSchema,
    options: PATCH,
    outcome: {
      status: 415,
      slug: 'unsupported-media-type',
      acceptPatch: true,
      detail: `Content-Type text/plain is not supported here; send application/json or ${MERGE}.`,
    },
  },
  {
    what: "a PATCH with the other version's vendor type",
    type: [V1],
    body: '{',
    schema: PatchOrderSchema,
    version: 2,
    options: PATCH,
    outcome: {
      status: 415,
      slug: 'unsupported-media-type',
      acceptPatch: true,
      detail: `Content-Type ${V1} is a version 1 body, but the request is served in version 2.`,
    },
  },
  // 400: the bytes, before the schema.
  {
    what: 'an empty body',
    type: ['application/json'],
    body: ' ',
    schema: CreateOrderSchema,
    outcome: { status: 400, slug: 'malformed-json', detail: 'The request body is empty; a JSON value is expected.' },
  },
  {
    what: 'a body that is not JSON',
    type: ['application/json'],
    body: '{"items":',
    schema: CreateOrderSchema,
    outcome: { status: 400, slug: 'malformed-json' },
  },
  {
    what: 'a merge patch that is not JSON',
    type: [MERGE],
    body: '{"status":null',
    schema: PatchOrderSchema,
    options: PATCH,
    outcome: { status: 400, slug: 'malformed-json' },
  },
  // 422: the refusal of null members, then the schema.
  {
    what: 'a member the schema lacks',
    type: ['application/json'],
    body: `{${ITEMS},"total":"1.00"}`,
    schema: CreateOrderSchema,
    outcome: UNKNOWN_TOTAL,
  },
  {
    what: 'an array',
    type: ['application/json'],
    body: '[]',
    schema: CreateOrderSchema,
    outcome: NOT_AN_OBJECT,
  },
  {
    what: 'a merge patch with null members, which refuses them before the schema sees the unknown one',
    type: [MERGE],
    body: '{"status":null,"items":null,"total":1}',
    schema: PatchOrderSchema,
    options: PATCH,
    outcome: {
      status: 422,
      slug: 'validation',
      detail: 'The request body is invalid at /status, /items.',
      pointers: ['/status', '/items'],
    },
  },
  {
    what: 'a merge patch with no null member but an unknown one',
    type: [MERGE],
    body: '{"total":1}',
    schema: PatchOrderSchema,
    options: PATCH,
    outcome: UNKNOWN_TOTAL,
  },
  {
    what: 'a merge patch that is an array',
    type: [MERGE],
    body: '[null]',
    schema: PatchOrderSchema,
    options: PATCH,
    outcome: NOT_AN_OBJECT,
  },
  {
    what: 'a v1 payment body served in version 2',
    type: ['application/json'],
    body: '{"orderId":7,"amount":59.9,"currency":"EUR"}',
    schema: PaymentV2Schema,
    version: 2,
    outcome: { status: 422, slug: 'validation', pointers: ['/amount', '/currency'] },
  },
  {
    what: 'a v2 payment body served in version 1',
    type: ['application/json'],
    body: V2_PAYMENT,
    schema: PaymentV1Schema,
    version: 1,
    outcome: { status: 422, slug: 'validation', pointers: ['/amount', '/currency'] },
  },
];

const pointerOf = (e: ProblemError) => ('pointer' in e ? e.pointer : `?${e.parameter}`);

/** What readJsonBody gives for `row` on `request`: its value, or the parts of the HttpError a row names. */
function outcomeOf(row: Row, request: Request): Row['outcome'] {
  try {
    return { value: readJsonBody(contextOf(request, row.body, row.version ?? 1), row.schema, row.options) };
  } catch (error) {
    assert.ok(error instanceof HttpError, String(error));
    const expected = row.outcome as Refusal;
    return {
      status: error.status,
      slug: error.slug,
      ...(expected.detail === undefined ? {} : { detail: error.init.detail }),
      ...(error.init.errors === undefined ? {} : { pointers: error.init.errors.map(pointerOf) }),
      ...(error.init.headers?.['accept-patch'] === ACCEPT_PATCH ? { acceptPatch: true } : {}),
    };
  }
}

describe('readJsonBody()', () => {
  for (const row of ROWS) {
    const expected = 'value' in row.outcome ? 'its value' : `${row.outcome.status} ${row.outcome.slug}`;
    it(`answers ${row.what} with ${expected}`, () => {
      assert.deepEqual(outcomeOf(row, webRequest(row.type)), row.outcome);
    });
    it(`answers ${row.what} alike on the node adapter's request`, () => {
      assert.deepEqual(outcomeOf(row, nodeRequest(row.type)), row.outcome);
    });
  }

  it("reads a node request's Content-Type without building its Headers", () => {
    const request = nodeRequest(['application/json']);
    let built = false;
    Object.defineProperty(request, 'headers', {
      get: () => {
        built = true;
        return new Headers();
      },
    });
    readJsonBody(contextOf(request, `{${ITEMS}}`, 1), CreateOrderSchema);
    assert.equal(built, false);
  });
});
