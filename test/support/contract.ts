/**
 * The contract check: every response the HTTP tests receive is validated
 * against the OpenAPI document's entry for its operation, status and media
 * type. A response that disagrees with the document fails the test.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv';
import type { RouteSpec } from '../../src/pipeline/context.ts';
import { createRouter } from '../../src/http/router.ts';
import { buildOpenApi } from '../../src/openapi/document.ts';
import { openApiPath } from '../../src/openapi/parameters.ts';
import { routes } from '../../src/service/routes.ts';

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document, walked generically as untyped JSON
type Json = Record<string, any>;

export interface Contract {
  /** The ways `response` (whose body text is `body`) disagrees with the document; empty when it agrees. */
  check(method: string, url: string, response: Response, body: string): string[];
  /** How many responses were checked against an operation. */
  readonly checked: number;
}

export function createContract(document: Json = buildOpenApi(routes), table: readonly RouteSpec[] = routes): Contract {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema({ $id: 'openapi', components: document.components });
  const validators = new Map<string, ValidateFunction>();
  const validatorFor = (schema: Json): ValidateFunction => {
    const key = JSON.stringify(schema);
    let validate = validators.get(key);
    if (validate === undefined) {
      const rooted = JSON.parse(key.replaceAll('"#/components/', '"openapi#/components/')) as Json;
      validate = ajv.compile(rooted);
      validators.set(key, validate);
    }
    return validate;
  };
  const router = createRouter(
    table.map((r) => ({
      method: r.method,
      pattern: r.pattern,
      handler: r,
      ...(r.versioned === undefined ? {} : { versioned: r.versioned }),
    })),
  );
  /** A response object, or the entry of `components.responses` its `$ref` names. */
  const resolve = (response: Json | undefined): Json | undefined =>
    typeof response?.$ref === 'string'
      ? document.components.responses[response.$ref.replace('#/components/responses/', '')]
      : response;
  let checked = 0;
  return {
    get checked() {
      return checked;
    },
    check(method, url, response, body) {
      const { pathname } = new URL(url);
      const match = router.match(method, pathname);
      if (match.kind !== 'found') return []; // not an operation: unknown path, 405, OPTIONS
      const route = match.handler;
      const version =
        route.versioned === false
          ? undefined
          : (match.version ?? (response.headers.get('deprecation') !== null ? 1 : 2));
      const path = `${version ? `/v${version}` : ''}${openApiPath(route.pattern)}`;
      const operation = document.paths[path]?.[method.toLowerCase()];
      const where = `${method} ${path}`;
      if (operation === undefined) return [`${where} is routed but not in the document`];
      checked += 1;
      const documented = resolve(operation.responses[String(response.status)]);
      if (documented === undefined)
        return [
          `${where} answered ${response.status}, ` +
            `which the document does not list (${Object.keys(operation.responses).join(', ')})`,
        ];
      if (body === '') return [];
      const type = (response.headers.get('content-type') ?? '').split(';')[0]!.trim();
      // A documented type may carry parameters (`text/plain; version=0.0.4`): it is matched by its type.
      const key = Object.keys(documented.content ?? {}).find((k) => k.split(';')[0]!.trim() === type);
      const media = key === undefined ? undefined : documented.content[key];
      if (media === undefined)
        return [
          `${where} ${response.status} answered ${type}, ` +
            `which the document does not list (${Object.keys(documented.content ?? {}).join(', ') || 'no body'})`,
        ];
      // Only JSON bodies are validated against their schema; the pages' HTML, Markdown and files are strings.
      if (type !== 'application/json' && !type.endsWith('+json')) return [];
      const validate = validatorFor(media.schema);
      if (!validate(JSON.parse(body))) {
        return (validate.errors ?? []).map(
          (e) =>
            `${where} ${response.status} body ${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`,
        );
      }
      return [];
    },
  };
}
