/**
 * The request pipeline: every route passes through here, so none can forget
 * the cross-cutting rules (SPEC §5, §6, §11, §13). It routes, reads the
 * body within its limits, authenticates and checks the route's scope, calls
 * the handler, turns every error into a problem response, adds the request
 * id and writes one log line.
 */
import { randomUUID } from 'node:crypto';
import { insufficientScope, type Authenticator, type Principal } from './auth/authenticator.ts';
import type { Scope } from './auth/tokens.ts';
import type { Config } from './config.ts';
import type { Database } from './db/database.ts';
import { isDatabaseUnavailable } from './db/errors.ts';
import { readBody } from './http/body.ts';
import { ACCEPT_PATCH } from './http/json-body.ts';
import type { ClientInfo } from './http/node-adapter.ts';
import { HttpError, internalError, problemResponse, unavailableError, type ProblemSlug } from './http/problem.ts';
import type { ListSpec } from './http/list-query.ts';
import type { SchemaName } from './openapi/schemas.ts';
import { createRouter, type Method, type Params, type Route } from './http/router.ts';
import { errorFields, type Logger } from './log.ts';
import { negotiate, type Version } from './http/negotiation.ts';
import { createRateLimiter, rateLimitField, type RateDecision } from './http/rate-limit.ts';
import { finish, versionPolicy, type CachePolicy } from './http/semantics.ts';
import { fingerprint, parseIdempotencyKey } from './http/idempotency-key.ts';
import { runIdempotent } from './idempotency.ts';
import type { Queryable } from './db/database.ts';

export interface Services {
  readonly config: Config;
  readonly db: Database;
  readonly log: Logger;
  readonly authenticator: Authenticator;
  /** Fault injection for tests, set only through `startServer()`'s options; never from configuration or a request. */
  readonly hooks?: TestHooks;
}

export interface TestHooks {
  /** Runs after the payment row is inserted, before the order moves to paid and the transaction commits. */
  afterPaymentInsert?(): Promise<void>;
}

export interface RequestContext {
  readonly request: Request;
  readonly url: URL;
  readonly params: Params;
  /** The API version the request is served in: the path's prefix, else 1 (SPEC §8). */
  readonly version: 1 | 2;
  readonly requestId: string;
  /** The request body, already read within the limits (empty for GET and HEAD). */
  readonly body: Uint8Array;
  /** Set on every route that needs a scope; `undefined` on public routes. */
  readonly principal: Principal | undefined;
  readonly services: Services;
  /**
   * The transaction a write must run in when the request carries an
   * Idempotency-Key (so its effect commits with the stored result);
   * `undefined` otherwise. Pass it to `inTransaction()`.
   */
  readonly tx: Queryable | undefined;
}

export type Handler = (ctx: RequestContext) => Promise<Response>;

export interface RouteSpec {
  readonly method: Method;
  readonly pattern: string;
  /** `public`, or the scope a token must carry (SPEC §4, §6). */
  readonly auth: 'public' | Scope;
  readonly handler: Handler;
  /** `false` for routes outside the API versions (health): no prefix, no negotiation. */
  readonly versioned?: boolean;
  /** `Cache-Control` of a successful GET or HEAD (SPEC §9); `no-store` when absent. */
  readonly cache?: CachePolicy;
  /** SPEC §7: every POST takes an Idempotency-Key (`optional` by default); `required` on payments. */
  readonly idempotency?: 'optional' | 'required';
  /** What the OpenAPI document says of this route (src/openapi/document.ts). */
  readonly doc: RouteDoc;
}

/** A schema of `src/openapi/schemas.ts` by name, the same for both versions or one per version. */
export type VersionedSchema = SchemaName | { readonly v1: SchemaName; readonly v2: SchemaName };

export interface RouteDoc {
  readonly summary: string;
  readonly description?: string;
  /** The success status and its body. */
  readonly success: { readonly status: 200 | 201 | 204; readonly schema?: VersionedSchema };
  /** The request body (JSON). */
  readonly body?: VersionedSchema;
  /** A collection's query rules: page, pageSize, sort and the filters, each filter documented in `query`. */
  readonly list?: ListSpec<string, Record<string, unknown>>;
  /** Query parameters (the filters of `list`), as JSON Schemas. */
  readonly query?: Readonly<Record<string, { readonly description: string; readonly schema: Readonly<Record<string, unknown>> }>>;
  /** Takes `If-Match` (SPEC §9). */
  readonly ifMatch?: boolean;
  /** The refusals of this route's own rules, beyond those every route of its kind has. */
  readonly problems?: readonly (readonly [number, ProblemSlug])[];
}

export type App = (request: Request, client: ClientInfo) => Promise<Response>;

/** Time a client gets to send its whole body. */
export const BODY_TIMEOUT_MS = 30_000;
// SPEC §13: 1–128 visible ASCII characters.
const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

export function createApp(services: Services, routes: readonly RouteSpec[]): App {
  const router = createRouter<RouteSpec>(routes.map((r): Route<RouteSpec> => ({ method: r.method, pattern: r.pattern, handler: r, ...(r.versioned === undefined ? {} : { versioned: r.versioned }) })));
  const { log, config } = services;
  const limiter = config.rateLimit === undefined ? undefined : createRateLimiter(config.rateLimit);
  const versions = versionPolicy(config);

  return async function handle(request, client) {
    const started = performance.now();
    const incomingId = request.headers.get('x-request-id');
    const requestId = incomingId !== null && REQUEST_ID.test(incomingId) ? incomingId : randomUUID();
    const url = new URL(request.url);
    let principal: Principal | undefined;
    let route: RouteSpec | undefined;
    let version: Version | undefined;
    let contentType: string | undefined;
    let rate: RateDecision | undefined;
    let response: Response;
    try {
      response = await dispatch();
      if (route !== undefined && response.status < 300) response = await finish(request, response, { cache: route.cache ?? 'no-store', contentType, cacheMaxAge: config.cacheMaxAge });
    } catch (error) {
      response = problemResponse(toHttpError(error), url.pathname, requestId);
    }
    if (limiter !== undefined && rate === undefined) {
      // Requests refused before reaching their route's limit check (401, 404,
      // 405, 406, 413…) count against the client address, and are refused
      // with 429 past it, so that guessing tokens or paths is limited too.
      rate = limiter.consume(`address:${client.remoteAddress}`);
      if (!rate.allowed) response = problemResponse(rateLimited(rate), url.pathname, requestId);
    }
    const headers = response.headers;
    headers.set('x-request-id', requestId);
    if (route !== undefined) {
      const vary = [...(route.versioned === false ? [] : ['Accept']), ...(route.auth === 'public' ? [] : ['Authorization'])];
      if (vary.length > 0) headers.set('vary', vary.join(', '));
    }
    if (version === 1) versions.decorate(headers, url.pathname);
    if (limiter !== undefined && rate !== undefined) {
      headers.set('ratelimit-policy', limiter.policy);
      headers.set('ratelimit', rateLimitField(rate));
    }
    log.info('request', {
      requestId,
      method: request.method,
      path: url.pathname,
      status: response.status,
      durationMs: Math.round((performance.now() - started) * 100) / 100,
      userId: principal?.userId ?? null,
    });
    return response;

    async function dispatch(): Promise<Response> {
      // Read the body first, whatever the route: the limit holds everywhere (SPEC §11).
      const body = request.body === null ? new Uint8Array(0) : await readBody(request, config.maxBodyBytes, BODY_TIMEOUT_MS);
      const match = router.match(request.method, url.pathname);
      if (match.version !== undefined) version = match.version;
      switch (match.kind) {
        case 'not-found':
          throw new HttpError(404, 'not-found', { detail: `No resource at ${url.pathname}.` });
        case 'method-not-allowed':
          throw new HttpError(405, 'method-not-allowed', {
            detail: `${request.method} is not allowed here; use ${match.allow}.`,
            headers: { allow: match.allow },
          });
        case 'options':
          // RFC 5789 §3.1: where PATCH is allowed, say which patch formats it takes.
          return new Response(null, { status: 204, headers: { allow: match.allow, ...(match.allow.includes('PATCH') ? { 'accept-patch': ACCEPT_PATCH } : {}) } });
      }
      route = match.handler;
      if (route.versioned !== false) {
        const negotiated = negotiate(request.headers.get('accept'), match.version);
        if (!negotiated.ok) throw new HttpError(406, 'not-acceptable', { detail: negotiated.detail });
        version = negotiated.version;
        contentType = negotiated.contentType;
        if (version === 1) versions.refuseWhenSunset(url.pathname);
      }
      if (route.auth !== 'public') {
        principal = await services.authenticator.authenticate(request.headers.get('authorization'));
        if (limiter !== undefined) {
          rate = limiter.consume(`user:${principal.userId}`);
          if (!rate.allowed) throw rateLimited(rate);
        }
        if (!principal.scopes.has(route.auth)) throw insufficientScope(route.auth);
      } else if (limiter !== undefined) {
        rate = limiter.consume(`address:${client.remoteAddress}`);
        if (!rate.allowed) throw rateLimited(rate);
      }
      const ctx: RequestContext = { request, url, params: match.params, version: version ?? 1, requestId, body, principal, services, tx: undefined };
      const finishing = (response: Response) => finish(request, response, { cache: 'no-store', contentType, cacheMaxAge: config.cacheMaxAge });
      const handler = route.handler;
      if (request.method === 'POST' && principal !== undefined) {
        const parsed = parseIdempotencyKey(request.headers.get('idempotency-key'));
        if (!parsed.ok) throw new HttpError(400, 'invalid-header', { detail: parsed.detail });
        if (parsed.key === undefined) {
          if (route.idempotency === 'required') {
            throw new HttpError(400, 'idempotency-key-missing', { detail: `${request.method} ${url.pathname} needs an Idempotency-Key header.` });
          }
        } else {
          const idempotent = { principal, key: parsed.key, fingerprint: fingerprint(request.method, `${url.pathname} v${version ?? 1}`, body), instance: url.pathname, requestId };
          return runIdempotent(services.db, idempotent, (tx) => handler({ ...ctx, tx }), finishing);
        }
      }
      return handler(ctx);
    }

    function toHttpError(error: unknown): HttpError {
      if (error instanceof HttpError) return error;
      if (isDatabaseUnavailable(error)) {
        log.warn('database unavailable', { requestId, ...errorFields(error) });
        return unavailableError();
      }
      log.error('unhandled error', { requestId, method: request.method, path: url.pathname, ...errorFields(error) });
      return internalError();
    }
  };
}

function rateLimited(decision: RateDecision): HttpError {
  return new HttpError(429, 'rate-limited', {
    detail: `Too many requests; try again in ${decision.resetSeconds} s.`,
    headers: { 'retry-after': String(decision.resetSeconds) },
  });
}

/** The principal of a route that declared a scope; a route marked public that calls this is a bug. */
export function principalOf(ctx: RequestContext): Principal {
  if (ctx.principal === undefined) throw new Error(`route ${ctx.url.pathname} needs a principal but is public`);
  return ctx.principal;
}
