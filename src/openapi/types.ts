/**
 * What a route says of itself for the OpenAPI document (src/openapi/document.ts):
 * its summary, success, body, query and the problems of its own rules.
 */
import type * as v from 'valibot';
import type { ListSpec } from '../http/list-query.ts';
import type { ProblemSlug } from '../http/problem.ts';
import type { Method } from '../http/router.ts';
import type { Scope } from '../auth/tokens.ts';

/** A schema under its name in the document's `components.schemas` (made by `named()`, `page()` of atoms.ts). */
export interface NamedSchema {
  readonly name: string;
  readonly schema: v.GenericSchema;
  /** The named schemas inside `schema`: the document refers to them by `$ref` rather than inline. */
  readonly refs: readonly NamedSchema[];
}

/** A named schema, the same for both versions or one per version. */
export type VersionedSchema = NamedSchema | { readonly v1: NamedSchema; readonly v2: NamedSchema };

/** A JSON Schema, written as the document shows it. */
export type JsonSchema = Readonly<Record<string, unknown>>;

/** A parameter the route documents itself: what it is, and its JSON Schema (with its limits). */
export interface ParameterDoc {
  readonly description: string;
  readonly schema: JsonSchema;
}

export interface RouteDoc {
  readonly summary: string;
  readonly description?: string;
  /** The success status and its body, and the fields its handler sets itself. */
  readonly success: {
    readonly status: 200 | 201 | 204;
    /** The body as JSON (and the version's vendor type on a versioned route). */
    readonly schema?: VersionedSchema;
    /** The body's other media types, in the route's order of preference, each with its schema. */
    readonly media?: Readonly<Record<string, JsonSchema>>;
    /** Fields the handler sets on the success (named in headers.ts): `true` when on every one. */
    readonly fields?: Readonly<Record<string, boolean>>;
  };
  /** The path's string parameters (`{name}`; an `{id:int}` needs none), each with its limits. */
  readonly params?: Readonly<Record<string, ParameterDoc>>;
  /** The request body (JSON). */
  readonly body?: VersionedSchema;
  /** A request body that works for the demo tokens as it is: what Swagger UI's "Try it out" sends. */
  readonly bodyExample?: unknown;
  /** A collection's query rules: page, pageSize, sort and the filters, each filter documented in `query`. */
  readonly list?: ListSpec<string, Record<string, unknown>>;
  /** Query parameters (the filters of `list`), as JSON Schemas. */
  readonly query?: Readonly<Record<string, ParameterDoc>>;
  /** Takes `If-Match` (contract §9). */
  readonly ifMatch?: boolean;
  /** The refusals of this route's own rules, beyond those every route of its kind has. */
  readonly problems?: readonly (readonly [number, ProblemSlug])[];
}

/** What the document reads of a route (src/pipeline/context.ts's `RouteSpec` is one). */
export interface DocumentedRoute {
  readonly method: Method;
  readonly pattern: string;
  readonly auth: 'public' | Scope;
  readonly versioned?: boolean;
  readonly idempotency?: 'optional' | 'required';
  /** `'never'`: no answer of the route is rate limited or carries the rate-limit fields (health checks). */
  readonly rateLimited?: boolean | 'never' | 'unless-token';
  readonly doc: RouteDoc;
}
