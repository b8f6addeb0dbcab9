/**
 * The request pipeline: every route passes through here, so none can forget
 * the cross-cutting rules (contract §5, §6, §10, §11, §13, §16). It routes,
 * reads the body within its limits, authenticates and checks the route's
 * scope, calls the handler, turns every error into a problem response, adds
 * the request id, the rate-limit and CORS fields, writes one log line and
 * counts the request for `GET /metrics`.
 */
import { randomUUID } from 'node:crypto';
import { insufficientScope, type Principal } from '../auth/authenticator.ts';
import { isDatabaseUnavailable, poolerHint, withDeadline } from '../db/errors.ts';
import { ClientAbortError, readBody } from '../http/body.ts';
import { ACCEPT_PATCH } from '../http/json-body.ts';
import { fieldOf, type ClientInfo } from '../http/node-adapter.ts';
import { HttpError, internalError, problemResponse, unavailableError } from '../http/problem.ts';
import { createRouter, type Route, type RouteMatch } from '../http/router.ts';
import { corsPolicy, isPreflight, PREFLIGHT_VARY, preflightFields, responseFields, varyWith } from '../http/cors.ts';
import { clientAddress, trustedProxies } from '../http/client-address.ts';
import { createHttpMetrics } from '../metrics/http-metrics.ts';
import { errorFields } from '../base/logger.ts';
import { JSON_TYPE, negotiate, type Version } from '../http/negotiation.ts';
import {
  addressGroup,
  createRateLimiter,
  DEFAULT_MAX_KEYS,
  rateLimitField,
  type RateDecision,
} from '../http/rate-limit.ts';
import { bufferedResponse, fieldsOf } from '../http/response.ts';
import { finish, notModifiedEarly, versionPolicy } from '../http/semantics.ts';
import { fingerprint, parseIdempotencyKey } from '../http/idempotency-key.ts';
import type { Database, Db } from '../db/database.ts';
import type { ReplicaReads, RequestContext, RouteSpec, Services } from './context.ts';
import { UNKNOWN } from '../replica/positions.ts';
import { parseLsn } from '../replica/lsn.ts';
import { runIdempotent } from './idempotency.ts';

export type App = (request: Request, client: ClientInfo) => Promise<Response>;

/** contract §11: a request waits at most 5 s in all for the database, then gets 503. */
export const DATABASE_DEADLINE_MS = 5_000;
/** Time a client gets to send its whole body. */
export const BODY_TIMEOUT_MS = 30_000;
// contract §13: 1–128 visible ASCII characters.
const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

export function createApp(given: Services, routes: readonly RouteSpec[]): App {
  const router = createRouter<RouteSpec>(
    routes.map(
      (r): Route<RouteSpec> => ({
        method: r.method,
        pattern: r.pattern,
        handler: r,
        ...(r.versioned === undefined ? {} : { versioned: r.versioned }),
      }),
    ),
  );
  const metrics = given.metrics ?? createHttpMetrics();
  const services: Services = { ...given, metrics };
  const { log, config } = services;
  // contract §16: both read once; unset, neither costs a request anything.
  const allowOrigin = config.corsOrigins === undefined ? undefined : corsPolicy(config.corsOrigins);
  const trusted = config.trustProxy === undefined ? undefined : trustedProxies(config.trustProxy);
  // Two tables: a flood from new addresses fills only the addresses' one, and
  // never pushes an authenticated user into its shared overflow window.
  const maxKeys = services.hooks?.rateLimitMaxKeys ?? DEFAULT_MAX_KEYS;
  const limits =
    config.rateLimit === undefined
      ? undefined
      : {
          // Users need a token an admin made: ten times the room of anonymous addresses.
          users: createRateLimiter(config.rateLimit, undefined, maxKeys * 10),
          addresses: createRateLimiter(config.rateLimit, undefined, maxKeys),
        };
  // contract §10, §17: with REDIS_URL the windows are shared, and these tables are the fallback.
  const shared = limits === undefined ? undefined : services.sharedLimits;
  // contract §17: with DATABASE_READ_URL, the replica for safe reads.
  const { reads } = services;
  /** contract §13: GET /metrics is limited like any anonymous request, unless METRICS_TOKEN guards it. */
  const limitedRoute = (route: RouteSpec | undefined): boolean | 'never' =>
    route?.rateLimited === 'unless-token' ? config.metricsToken === undefined : (route?.rateLimited ?? true);
  const versions = versionPolicy(config);
  // What a handler sees of the services: all but the pool, which it reaches only through `ctx.db`.
  const { db: database, ...handlerServices } = services;

  return async function handle(request, client) {
    const started = performance.now();
    const incomingId = fieldOf(request, 'x-request-id');
    const requestId = incomingId !== null && REQUEST_ID.test(incomingId) ? incomingId : randomUUID();
    const url = new URL(request.url);
    // Routing and the log take the path as the client sent it: URL parsing resolves `..` and `\`.
    const path = client.path ?? url.pathname;
    // contract §16: the forwarded address only from a trusted proxy; it is what rate limits and the log see.
    const address =
      trusted === undefined
        ? client.remoteAddress
        : clientAddress(
            client.remoteAddress,
            fieldOf(request, 'forwarded'),
            fieldOf(request, 'x-forwarded-for'),
            trusted,
          );
    const origin = allowOrigin === undefined ? undefined : allowOrigin(fieldOf(request, 'origin'));
    const preflight =
      origin !== undefined && isPreflight(request.method, origin, fieldOf(request, 'access-control-request-method'));
    let principal: Principal | undefined;
    let route: RouteSpec | undefined;
    let match: RouteMatch<RouteSpec> | undefined;
    let version: Version | undefined;
    let contentType: string | undefined;
    let rate: RateDecision | undefined;
    let response: Response;
    let aborted = false;
    try {
      response = await dispatch();
      if (route !== undefined && response.status < 300)
        response = await finish(request, response, {
          cache: route.cache ?? 'no-store',
          contentType,
          cacheMaxAge: config.cacheMaxAge,
        });
    } catch (error) {
      // A client gone mid-body reads no answer; its log line says what happened (docs/http.md).
      aborted = error instanceof ClientAbortError;
      response = aborted
        ? bufferedResponse(null, { status: 400, headers: { connection: 'close' } })
        : problemResponse(toHttpError(error), path, requestId);
    }
    // Health checks are never counted. A route exempt from limits (GET /metrics)
    // and a CORS preflight's 204 are not counted; their refusals are (docs/operations.md).
    const exempt =
      limitedRoute(route) === 'never' ||
      (response.status < 400 && (limitedRoute(route) === false || (preflight && match?.kind === 'options')));
    if (limits !== undefined && rate === undefined && !exempt) {
      // Requests refused before reaching their route's limit check (401, 404,
      // 405, 406, 413…) count against the client address, and are refused
      // with 429 past it, so that guessing tokens or paths is limited too.
      const group = addressGroup(address);
      rate =
        shared === undefined
          ? limits.addresses.consume(group)
          : await shared.consume('addresses', group, limits.addresses);
      if (!rate.allowed) {
        metrics.rateLimited('address');
        response = problemResponse(rateLimited(rate), path, requestId);
      }
    }
    const headers = fieldsOf(response);
    headers.set('x-request-id', requestId);
    if (route !== undefined) {
      const vary = [
        ...(route.versioned === false ? [] : ['Accept']),
        ...(route.auth === 'public' ? [] : ['Authorization']),
      ];
      if (vary.length > 0) headers.set('vary', vary.join(', '));
    }
    if (version === 1) versions.decorate(headers, url.pathname);
    if (limits !== undefined && rate !== undefined) {
      headers.set('ratelimit-policy', limits.users.policy);
      headers.set('ratelimit', rateLimitField(rate));
    }
    if (allowOrigin !== undefined) {
      // contract §16, Fetch §3.2: every answer varies by Origin once CORS is on (a
      // shared cache must not hand one origin's answer to another); only a
      // listed origin gets the CORS fields.
      if (preflight && match?.kind === 'options' && response.status === 204) {
        for (const [name, value] of preflightFields(origin as string, headers.get('allow') ?? ''))
          headers.set(name, value);
        headers.set('vary', varyWith(headers.get('vary'), PREFLIGHT_VARY));
      } else {
        if (origin !== undefined) for (const [name, value] of responseFields(origin)) headers.set(name, value);
        headers.set('vary', varyWith(headers.get('vary'), ['Origin']));
      }
    }
    const seconds = (performance.now() - started) / 1000;
    log.info('request', {
      requestId,
      method: request.method,
      path,
      status: aborted ? null : response.status,
      ...(aborted ? { aborted: true } : {}),
      durationMs: Math.round(seconds * 100_000) / 100,
      userId: principal?.userId ?? null,
      clientAddress: address,
    });
    metrics.request(route?.pattern ?? patternOf(match), request.method, aborted ? undefined : response.status, seconds);
    return response;

    async function dispatch(): Promise<Response> {
      // Read the body first, whatever the route: the limit holds everywhere (contract §11).
      const body =
        request.body === null ? new Uint8Array(0) : await readBody(request, config.maxBodyBytes, BODY_TIMEOUT_MS);
      // contract §11: from here the request waits at most this long for the database, in all; then 503.
      return withDeadline(serve(body), services.databaseDeadlineMs ?? DATABASE_DEADLINE_MS);
    }

    async function serve(body: Uint8Array): Promise<Response> {
      match = router.match(request.method, path);
      if (match.version !== undefined) version = match.version;
      switch (match.kind) {
        case 'not-found':
          throw new HttpError(404, 'not-found', { detail: `No resource at ${path}.` });
        case 'method-not-allowed':
          throw new HttpError(405, 'method-not-allowed', {
            detail: `${request.method} is not allowed here; use ${match.allow}.`,
            headers: { allow: match.allow },
          });
        case 'options':
          // RFC 5789 §3.1: where PATCH is allowed, say which patch formats it takes.
          return bufferedResponse(null, {
            status: 204,
            headers: { allow: match.allow, ...(match.allow.includes('PATCH') ? { 'accept-patch': ACCEPT_PATCH } : {}) },
          });
      }
      route = match.handler;
      if (route.versioned !== false) {
        const negotiated = negotiate(fieldOf(request, 'accept'), match.version);
        if (negotiated.ok) {
          version = negotiated.version;
          contentType = negotiated.contentType;
        } else if (route.doc.success.status === 204) {
          // contract §4: a success with no body (DELETE → 204) is not refused for its Accept
          // (`application/problem+json`, as RFC 9457 clients send); its problems are problem+json anyway.
          version = match.version ?? 1;
        } else {
          throw new HttpError(406, 'not-acceptable', { detail: negotiated.detail });
        }
        if (version === 1) versions.refuseWhenSunset(url.pathname);
      }
      if (route.auth !== 'public') {
        principal = await services.authenticator.authenticate(fieldOf(request, 'authorization'));
        if (limits !== undefined) {
          const user = String(principal.userId);
          rate = shared === undefined ? limits.users.consume(user) : await shared.consume('users', user, limits.users);
          if (!rate.allowed) {
            metrics.rateLimited('user');
            throw rateLimited(rate);
          }
        }
        if (!principal.scopes.has(route.auth)) throw insufficientScope(route.auth);
      } else if (limits !== undefined && limitedRoute(route) === true) {
        const group = addressGroup(address);
        rate =
          shared === undefined
            ? limits.addresses.consume(group)
            : await shared.consume('addresses', group, limits.addresses);
        if (!rate.allowed) {
          metrics.rateLimited('address');
          throw rateLimited(rate);
        }
      }
      const safe = request.method === 'GET' || request.method === 'HEAD';
      if (reads === undefined) return respond(route, body, database);
      if (!safe) {
        // contract §17, read-your-writes: where this principal's write is, once it committed.
        try {
          return await respond(route, body, database);
        } finally {
          if (principal !== undefined) await recordWrite(principal.userId);
        }
      }
      const source = route.replica === true ? await readerFor(principal) : database;
      if (source === database) return respond(route, body, database);
      try {
        // contract §17: a conditional GET the replica does not answer 304 may name a newer revision than the
        // replica holds: the primary answers it, never a stale 200 (and a 304 from the replica is exact). Where
        // the route knows its tag without building the answer (an order's revision), the replica only tells it.
        const conditional = fieldOf(request, 'if-none-match') !== null;
        const response = await respond(route, body, source, conditional);
        if (response === MISSED) return respond(route, body, database);
        if (!conditional) return response;
        const finished = await finish(request, response, {
          cache: route.cache ?? 'no-store',
          contentType,
          cacheMaxAge: config.cacheMaxAge,
        });
        return finished.status === 304 ? finished : respond(route, body, database);
      } catch (error) {
        // The replica went away under this read: the primary answers it, and the next ones.
        if (!isDatabaseUnavailable(error)) throw error;
        reads.replica.failed(error);
        return respond(route, body, database);
      }
    }

    /** The replica when it may serve this principal's read (contract §17), else the primary. */
    async function readerFor(who: Principal | undefined): Promise<Database> {
      const { replica, positions } = reads as ReplicaReads;
      if (!replica.serves(undefined)) return database;
      const position = who === undefined ? undefined : await positions.lookup(who.userId);
      return position !== UNKNOWN && replica.serves(position) ? replica.db : database;
    }

    /**
     * Runs `route` for this request on `source`, a pool (the primary's, or the replica's for a read);
     * `MISSED`, with `tagOnly`, when the route's current tag there does not match the request's.
     */
    async function respond(route: RouteSpec, body: Uint8Array, source: Database): Promise<Response>;
    async function respond(
      route: RouteSpec,
      body: Uint8Array,
      source: Database,
      tagOnly: boolean,
    ): Promise<Response | typeof MISSED>;
    async function respond(
      route: RouteSpec,
      body: Uint8Array,
      source: Database,
      tagOnly = false,
    ): Promise<Response | typeof MISSED> {
      const matched = match as RouteMatch<RouteSpec> & { kind: 'found' };
      // The request's own handle on the pool, taken when a handler first reaches for it.
      let handle: Db | undefined;
      const ctx: RequestContext = {
        request,
        url,
        params: matched.params,
        version: version ?? 1,
        contentType: contentType ?? JSON_TYPE,
        requestId,
        body,
        principal,
        services: handlerServices,
        get db() {
          handle ??= source.handle();
          return handle;
        },
      };
      const finishing = (response: Response) =>
        finish(request, response, { cache: 'no-store', contentType, cacheMaxAge: config.cacheMaxAge });
      const { handler, currentTag } = route;
      if (currentTag !== undefined) {
        const early = await notModifiedEarly(request, () => currentTag(ctx), {
          cache: route.cache ?? 'no-store',
          contentType,
          cacheMaxAge: config.cacheMaxAge,
        });
        if (early !== undefined) return early;
        if (tagOnly) return MISSED;
      }
      if (request.method === 'POST' && principal !== undefined) {
        const parsed = parseIdempotencyKey(fieldOf(request, 'idempotency-key'));
        if (!parsed.ok) throw new HttpError(400, 'invalid-header', { detail: parsed.detail });
        if (parsed.key === undefined) {
          if (route.idempotency === 'required') {
            throw new HttpError(400, 'idempotency-key-missing', {
              detail: `${request.method} ${url.pathname} needs an Idempotency-Key header.`,
            });
          }
        } else {
          const idempotent = {
            principal,
            key: parsed.key,
            fingerprint: fingerprint(request.method, `${url.pathname} v${version ?? 1}`, body),
            instance: url.pathname,
            requestId,
          };
          return runIdempotent(ctx.db, idempotent, (savepoint) => handler({ ...ctx, db: savepoint }), finishing);
        }
      }
      return handler(ctx);
    }

    /** Records where `userId` wrote: the primary's WAL position, now that the write committed (or did not). */
    async function recordWrite(userId: number): Promise<void> {
      try {
        const current = await database.one<{ lsn: string }>('CurrentWalPosition');
        const lsn = parseLsn(current?.lsn);
        if (lsn !== undefined) await (reads as ReplicaReads).positions.record(userId, lsn);
      } catch (error) {
        // The write's answer stands; its reads find no position here and may read the replica once it
        // has caught up (a database that cannot say where it is has failed the write too, mostly).
        log.warn('read replica: the position of a write could not be recorded', { requestId, ...errorFields(error) });
      }
    }

    /**
     * The route pattern a request that reached no handler is counted under:
     * its path's pattern for 405 and OPTIONS (found again by a method the
     * path takes), none for 404; and for one refused before routing (413),
     * its path routed now.
     */
    function patternOf(matched: RouteMatch<RouteSpec> | undefined): string | undefined {
      const found = matched ?? router.match(request.method, path);
      if (found.kind === 'found') return found.pattern;
      if (found.kind === 'not-found') return undefined;
      const again = router.match(found.allow.slice(0, found.allow.indexOf(',')), path);
      return again.kind === 'found' ? again.pattern : undefined;
    }

    function toHttpError(error: unknown): HttpError {
      if (error instanceof HttpError) return error;
      if (isDatabaseUnavailable(error)) {
        log.warn('database unavailable', { requestId, ...errorFields(error) });
        return unavailableError();
      }
      // contract §17: a pooler's refusal is a configuration mistake the log names.
      const hint = poolerHint(error);
      log.error('unhandled error', {
        requestId,
        method: request.method,
        path: url.pathname,
        ...errorFields(error),
        ...(hint === undefined ? {} : { hint }),
      });
      return internalError();
    }
  };
}

/** What `respond()` gives when the replica's tag does not match: the primary is to answer (contract §17). */
const MISSED = Symbol('the tag missed');

function rateLimited(decision: RateDecision): HttpError {
  return new HttpError(429, 'rate-limited', {
    detail: `Too many requests; try again in ${decision.resetSeconds} s.`,
    headers: { 'retry-after': String(decision.resetSeconds) },
  });
}
