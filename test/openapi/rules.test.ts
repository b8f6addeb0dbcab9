/**
 * The OpenAPI document's rules of issue 24: compact (shared responses in
 * `components.responses`, under 350 KB as served), every field that is on
 * every answer of a status marked `required`, every success with its media
 * types and schemas, 304 on every conditional GET and HEAD, `Event` told
 * apart by its `type`, every request string and array bounded, the pages'
 * own fields and content codings described. test/openapi/headers.test.ts
 * holds the required fields against the wire.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import util from 'node:util';
import { EVENT_TYPES } from '../../src/outbox/outbox.ts';
import { buildOpenApi } from '../../src/openapi/document.ts';
import { routes } from '../../src/service/routes.ts';

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document, walked generically as untyped JSON
type Json = Record<string, any>;

const document: Json = buildOpenApi(routes);
const served = JSON.stringify(document);

/** `object`, or the entry of `components` its `$ref` names. */
function resolved(object: Json): Json {
  const ref = object.$ref;
  if (typeof ref !== 'string') return object;
  const [, , kind, name] = ref.split('/') as [string, string, string, string];
  return resolved(document.components[kind][name]);
}

interface Answer {
  readonly where: string;
  readonly path: string;
  readonly method: string;
  readonly status: string;
  readonly response: Json;
  /** Each field of the response, by name: `true` when it is on every such answer. */
  readonly fields: Readonly<Record<string, boolean>>;
}

/** Every response of every operation, its `$ref`s followed. */
const answers: Answer[] = Object.entries(document.paths as Json).flatMap(([path, item]) =>
  Object.entries(item as Json).flatMap(([method, op]) =>
    Object.entries(op.responses as Json).map(([status, given]) => {
      const response = resolved(given);
      const fields = Object.fromEntries(
        Object.entries((response.headers ?? {}) as Json).map(([name, field]) => [
          name,
          resolved(field).required === true,
        ]),
      );
      return { where: `${method} ${path} ${status}`, path, method, status, response, fields };
    }),
  ),
);

/** The answers of `filter` that do not carry `name` as a required field. */
const lacking = (name: string, filter: (answer: Answer) => boolean): string[] =>
  answers.filter((a) => filter(a) && a.fields[name] !== true).map((a) => `${a.where}: ${name}`);

describe('a compact document', () => {
  it('is under 350 KB as served (JSON.stringify, no indentation)', () => {
    assert.ok(Buffer.byteLength(served) < 350_000, `${Buffer.byteLength(served)} bytes`);
  });

  it('refers to the problem responses, 304s and OPTIONS 204s in components.responses, each written once', () => {
    const shared = Object.entries(document.components.responses as Json);
    assert.ok(shared.length > 40, `${shared.length} shared responses`);
    const contents = shared.map(([, response]) => JSON.stringify(response));
    assert.equal(new Set(contents).size, contents.length, 'two components.responses have the same content');
    for (const item of Object.values(document.paths as Json)) {
      for (const op of Object.values(item as Json)) {
        for (const [status, response] of Object.entries(op.responses as Json)) {
          if (Number(status) >= 400 || status === '304' || op.operationId.startsWith('options'))
            assert.ok(typeof (response as Json).$ref === 'string', `${op.operationId} ${status} is written inline`);
        }
      }
    }
  });

  it('names each shared response by what sets it apart, under the status it is used for', () => {
    for (const answer of answers.filter((a) => Number(a.status) >= 400)) {
      const ref: string = document.paths[answer.path][answer.method].responses[answer.status].$ref;
      assert.match(ref, new RegExp(`^#/components/responses/Problem${answer.status}[A-Z]`), answer.where);
    }
    assert.deepEqual(
      Object.keys(document.components.responses).filter((name) => !name.startsWith('Problem')),
      [
        'NotModified',
        'NotModifiedUnlimited',
        'NotModifiedV1',
        'Options',
        'OptionsPatch',
        'OptionsV1',
        'OptionsV1Patch',
      ],
    );
    // The same routes, the same document: names do not depend on anything but what they name.
    assert.equal(JSON.stringify(buildOpenApi(routes)), served);
  });

  it('uses every component it has', () => {
    const unused = Object.entries(document.components as Json)
      .filter(([kind]) => kind !== 'securitySchemes')
      .flatMap(([kind, entries]) =>
        Object.keys(entries as Json).filter((name) => !served.includes(`"#/components/${kind}/${name}"`)),
      );
    assert.deepEqual(unused, []);
  });
});

describe('the fields on every answer: required', () => {
  const probe = (a: Answer) => (a.path === '/healthz' || a.path === '/readyz') && a.method !== 'options';
  const beforeRouting = (a: Answer) => a.status === '408' || a.status === '413';
  const beforeRoute = (a: Answer) => beforeRouting(a) || a.status === '405';

  it('says the document describes the default configuration', () => {
    assert.match(document.info.description, /default configuration/);
    assert.match(document.info.description, /RATE_LIMIT=off/);
  });

  it('X-Request-Id, everywhere; the rate-limit fields on every counted answer', () => {
    assert.deepEqual(
      lacking('X-Request-Id', () => true),
      [],
    );
    for (const name of ['RateLimit', 'RateLimit-Policy']) {
      assert.deepEqual(
        lacking(name, (a) => !probe(a) || beforeRoute(a)),
        [],
      );
      assert.deepEqual(
        answers.filter((a) => probe(a) && !beforeRoute(a) && name in a.fields).map((a) => a.where),
        [],
      );
    }
  });

  it('Deprecation, Sunset and the successor Link on every version 1 answer routed', () => {
    for (const name of ['Deprecation', 'Sunset', 'Link'])
      assert.deepEqual(
        lacking(name, (a) => a.path.startsWith('/v1/') && !beforeRouting(a)),
        [],
      );
  });

  it('ETag on 200 of GET and HEAD, 201 and 304; Location on 201; Cache-Control but on OPTIONS', () => {
    assert.deepEqual(
      lacking(
        'ETag',
        (a) => (a.status === '200' && ['get', 'head'].includes(a.method)) || ['201', '304'].includes(a.status),
      ),
      [],
    );
    assert.deepEqual(
      lacking('Location', (a) => a.status === '201'),
      [],
    );
    assert.deepEqual(
      lacking('Cache-Control', (a) => a.method !== 'options' || a.status !== '204'),
      [],
    );
  });

  it('WWW-Authenticate on 401; Allow on 405 and on OPTIONS; Retry-After on 429 and 503', () => {
    assert.deepEqual(
      lacking('WWW-Authenticate', (a) => a.status === '401'),
      [],
    );
    assert.deepEqual(
      lacking('Allow', (a) => a.status === '405' || (a.method === 'options' && a.status === '204')),
      [],
    );
    assert.deepEqual(
      lacking('Retry-After', (a) => a.status === '429' || a.status === '503'),
      [],
    );
    // Sometimes: a role refusal has no WWW-Authenticate, and POST /payments' 409 is also order-not-payable.
    assert.equal(document.paths['/v2/orders'].get.responses['403'].$ref, '#/components/responses/Problem403Forbidden');
    assert.equal(answers.find((a) => a.where === 'get /v2/orders 403')?.fields['WWW-Authenticate'], false);
    assert.equal(answers.find((a) => a.where === 'post /v2/payments 409')?.fields['Retry-After'], false);
    assert.equal(answers.find((a) => a.where === 'post /v2/orders 409')?.fields['Retry-After'], true);
  });

  it('writes each field twice at most in components.headers: as it may be sent, and .required', () => {
    for (const [name, field] of Object.entries(document.components.headers as Json))
      assert.equal(field.required === true, name.endsWith('.required'), name);
  });
});

describe('media types and schemas', () => {
  const content = (path: string) => document.paths[path].get.responses['200'].content as Json;

  it('declares every success with a body, with a schema for each media type', () => {
    for (const a of answers.filter((a) => ['200', '201'].includes(a.status) && a.method !== 'head')) {
      assert.ok(a.response.content, `${a.where}: no media type`);
      for (const [type, media] of Object.entries(a.response.content as Json))
        assert.ok(media.schema, `${a.where} ${type}`);
    }
  });

  it('types the pages: the index, the reference and its files, the problem pages, the metrics, the document', () => {
    const types = (path: string) => Object.keys(content(path));
    assert.deepEqual(content('/')['application/json'].schema, { $ref: '#/components/schemas/Index' });
    assert.deepEqual(types('/docs'), ['text/html']);
    assert.deepEqual(types('/docs/{file}'), ['text/javascript', 'text/css', 'image/png']);
    assert.deepEqual(types('/problems/{slug}'), ['text/html', 'text/markdown', 'application/json']);
    assert.deepEqual(content('/problems/{slug}')['application/json'].schema, {
      $ref: '#/components/schemas/ProblemPage',
    });
    assert.deepEqual(types('/metrics'), ['text/plain; version=0.0.4']);
    assert.deepEqual(types('/openapi.json'), ['application/json']);
    assert.deepEqual(types('/healthz'), ['application/json']);
    assert.deepEqual(types('/readyz'), ['application/json']);
  });

  it('answers 304 on every GET and HEAD: the conditional stage finishes every 200 with a tag', () => {
    const conditional = answers.filter((a) => ['get', 'head'].includes(a.method) && a.status === '200');
    for (const a of conditional)
      assert.ok(document.paths[a.path][a.method].responses['304'], `${a.method} ${a.path} has no 304`);
    assert.equal(conditional.length, answers.filter((a) => a.status === '304').length);
  });
});

describe('Event', () => {
  const schemas = document.components.schemas as Json;

  it('is one of the event types, told apart by type, each with its data typed', () => {
    const event = schemas.Event;
    assert.equal(event.discriminator.propertyName, 'type');
    assert.deepEqual(Object.keys(event.discriminator.mapping), [...EVENT_TYPES]);
    assert.deepEqual(
      event.oneOf.map((option: Json) => option.$ref),
      Object.values(event.discriminator.mapping),
    );
    const data: Record<string, string> = {};
    for (const [type, ref] of Object.entries(event.discriminator.mapping as Record<string, string>)) {
      const variant = schemas[ref.replace('#/components/schemas/', '')];
      assert.equal(variant.properties.type.const, type);
      assert.deepEqual(variant.required, ['id', 'type', 'createdAt', 'data']);
      data[type] = variant.properties.data.$ref;
    }
    assert.deepEqual(data, {
      'order.created': '#/components/schemas/OrderV2',
      'order.updated': '#/components/schemas/OrderV2',
      'order.status_changed': '#/components/schemas/OrderStatusChange',
      'order.deleted': '#/components/schemas/OrderV2',
      'payment.succeeded': '#/components/schemas/PaymentV2',
      'user.created': '#/components/schemas/User',
    });
    assert.deepEqual(Object.keys(schemas.OrderStatusChange.properties), ['from', 'to', 'order']);
  });
});

describe('what a request may send: bounded', () => {
  /** Every string and array of `schema`, `$ref`s followed, with where it is. */
  function* walk(schema: Json, at: string, seen = new Set<string>()): Generator<[string, Json]> {
    if (typeof schema.$ref === 'string') {
      if (seen.has(schema.$ref)) return;
      yield* walk(schemas()[schema.$ref.replace('#/components/schemas/', '')], at, new Set([...seen, schema.$ref]));
      return;
    }
    if (schema.type === 'string' || schema.type === 'array') yield [at, schema];
    for (const [name, inner] of Object.entries((schema.properties ?? {}) as Json))
      yield* walk(inner, `${at}/${name}`, seen);
    if (schema.items) yield* walk(schema.items, `${at}/items`, seen);
    for (const option of [...(schema.oneOf ?? []), ...(schema.anyOf ?? [])]) yield* walk(option, at, seen);
  }
  const schemas = () => document.components.schemas as Json;
  const operations = () =>
    Object.entries(document.paths as Json).flatMap(([path, item]) =>
      Object.entries(item as Json).map(([method, op]) => ({ where: `${method} ${path}`, op })),
    );

  it('bounds every string parameter by a maxLength or an enum, never both (path, query and header)', () => {
    const unbounded: string[] = [];
    const both: string[] = [];
    for (const { where, op } of operations()) {
      for (const given of op.parameters as Json[]) {
        const parameter = resolved(given);
        const { type, maxLength, enum: values } = parameter.schema;
        if (type === 'string' && typeof maxLength !== 'number' && !Array.isArray(values))
          unbounded.push(`${where} ${parameter.in} ${parameter.name}`);
        // orval's zod output cannot apply a length to an enum (it crashed on load, "zod.max is not a function").
        if (Array.isArray(values) && maxLength !== undefined) both.push(`${where} ${parameter.in} ${parameter.name}`);
      }
    }
    assert.deepEqual(unbounded, []);
    assert.deepEqual(both, []);
    const names = new Set(operations().flatMap(({ op }) => (op.parameters as Json[]).map((p) => resolved(p).name)));
    for (const name of [
      'If-None-Match',
      'If-Match',
      'Idempotency-Key',
      'X-Request-Id',
      'sort',
      'cursor',
      'file',
      'slug',
    ])
      assert.ok(names.has(name), name);
  });

  it('bounds every string (maxLength, or one of an enum) and every array (maxItems) of a request body', () => {
    const unbounded: string[] = [];
    for (const { where, op } of operations()) {
      for (const [type, media] of Object.entries((op.requestBody?.content ?? {}) as Json)) {
        for (const [at, schema] of walk(media.schema, `${where} ${type} `)) {
          const bounded =
            schema.type === 'array'
              ? typeof schema.maxItems === 'number'
              : typeof schema.maxLength === 'number' || Array.isArray(schema.enum);
          if (!bounded) unbounded.push(at);
        }
      }
    }
    assert.deepEqual(unbounded, []);
  });

  it('names the formats: uri, email, date-time', () => {
    const schemas = document.components.schemas as Json;
    assert.equal(schemas.NewWebhookEndpoint.properties.url.format, 'uri');
    assert.equal(schemas.NewWebhookEndpoint.properties.url.maxLength, 2048);
    assert.equal(schemas.NewWebhookEndpoint.properties.events.maxItems, EVENT_TYPES.length);
    assert.equal(schemas.WebhookEndpoint.properties.url.format, 'uri');
    assert.equal(schemas.NewUser.properties.email.format, 'email');
    assert.equal(schemas.OrderV2.properties.createdAt.format, 'date-time');
  });
});

describe("the pages' own fields and the content codings", () => {
  it('Content-Security-Policy on /docs (always) and the problem pages (their HTML); nosniff on the pages', () => {
    const fieldsOf = (path: string) => answers.find((a) => a.where === `get ${path} 200`)?.fields ?? {};
    assert.equal(fieldsOf('/docs')['Content-Security-Policy'], true);
    assert.equal(fieldsOf('/problems/{slug}')['Content-Security-Policy'], false);
    for (const path of ['/', '/docs', '/docs/{file}', '/problems/{slug}'])
      assert.equal(fieldsOf(path)['X-Content-Type-Options'], true, path);
  });

  it('Content-Encoding, never required, on every answer with content; ETag and Vary tell codings apart', () => {
    assert.deepEqual(
      answers.filter((a) => a.response.content && a.fields['Content-Encoding'] !== false).map((a) => a.where),
      [],
    );
    assert.deepEqual(
      answers
        .filter((a) => !a.response.content && a.method !== 'head' && 'Content-Encoding' in a.fields)
        .map((a) => a.where),
      [],
    );
    const headers = document.components.headers as Json;
    assert.deepEqual(headers['Content-Encoding'].schema.enum, ['gzip', 'br']);
    assert.match(headers['Content-Encoding'].description, /1 KiB/);
    assert.match(headers['ETag.required'].description, /-gzip or -br/);
    assert.match(headers['Vary.required'].description, /Accept-Encoding/);
  });
});

describe('a document every client generator loads (orval, openapi-zod-client)', () => {
  /** Every schema object of the document, with where it is. */
  function* schemasOf(value: unknown, where: string): Generator<{ where: string; schema: Json }> {
    if (Array.isArray(value)) {
      for (const [i, member] of value.entries()) yield* schemasOf(member, `${where}/${i}`);
      return;
    }
    if (value === null || typeof value !== 'object') return;
    yield { where, schema: value as Json };
    for (const [key, member] of Object.entries(value)) yield* schemasOf(member, `${where}/${key}`);
  }

  it('gives every const its type, and its value as a one-value enum', () => {
    const untyped = [...schemasOf(document, '')]
      .filter(({ schema }) => 'const' in schema)
      .filter(
        ({ schema }) => schema.type !== typeof schema.const || !util.isDeepStrictEqual(schema.enum, [schema.const]),
      )
      .map(({ where }) => where);
    assert.deepEqual(untyped, []);
    assert.deepEqual(document.components.schemas.Health.properties.status, {
      type: 'string',
      const: 'ok',
      enum: ['ok'],
    });
  });

  it('writes patterns without needless escapes (no \\/)', () => {
    const patterns = [...schemasOf(document, '')].filter(({ schema }) => typeof schema.pattern === 'string');
    assert.deepEqual(
      patterns.filter(({ schema }) => schema.pattern.includes('\\/')).map(({ where }) => where),
      [],
    );
    assert.equal(document.components.schemas.Problem.properties.type.pattern, '^/problems/[a-z-]+$');
    // The same language: each still compiles, as a unicode expression too.
    for (const { schema } of patterns) new RegExp(schema.pattern, 'u');
  });
});
