/**
 * What the pipeline hands a route's handler, and what a route declares of
 * itself: the types every feature builds on (src/pipeline/pipeline.ts runs them).
 */
import type { CursorKeys } from '../db/keys.ts';
import type { Authenticator, Principal } from '../auth/authenticator.ts';
import type { Scope } from '../auth/tokens.ts';
import type { Config } from '../config/config.ts';
import type { Database, Db } from '../db/database.ts';
import type { Logger } from '../base/logger.ts';
import type { Method, Params } from '../http/router.ts';
import type { Version } from '../http/negotiation.ts';
import type { Conditions } from '../http/conditional.ts';
import type { CachePolicy } from '../http/semantics.ts';
import type { HttpMetrics } from '../metrics/http-metrics.ts';
import type { SharedLimits } from '../limits/shared-limits.ts';
import type { Positions } from '../replica/positions.ts';
import type { Replica } from '../replica/replica.ts';
import type { RouteDoc } from '../openapi/types.ts';
import type { ClaimRow, IdempotentRequest } from './idempotency.ts';

export interface Services {
  readonly config: Config;
  readonly db: Database;
  readonly log: Logger;
  readonly authenticator: Authenticator;
  /** contract §4: the keys the cursors of collection pages are sealed with, shared by every process. */
  readonly cursorKeys: CursorKeys;
  /**
   * How long a request may wait for the database in all (contract §11); tests shorten it. Default
   * `DATABASE_DEADLINE_MS`.
   */
  readonly databaseDeadlineMs?: number;
  /** Bounds and timings whose production defaults tests make small or short. */
  readonly tuning?: Tuning;
  /** What the pipeline counts for GET /metrics; `createApp()` makes it when not given. */
  readonly metrics?: HttpMetrics;
  /**
   * With `REDIS_URL` (and `RATE_LIMIT` not `off`): the rate-limit windows shared through Redis (contract
   * §10, §17), which fall back to the pipeline's own tables; absent, the pipeline counts in its own alone.
   */
  readonly sharedLimits?: SharedLimits;
  /**
   * With `DATABASE_READ_URL` (contract §17): the replica that routes marked `replica` read from, and where
   * each principal last wrote; absent, every statement goes to the primary.
   */
  readonly reads?: ReplicaReads;
}

/** Bounds and timings with production defaults (each named where it is used); tests make them small or short. */
export interface Tuning {
  /** The rate limiter's table bound (`DEFAULT_MAX_KEYS`). */
  readonly rateLimitMaxKeys?: number;
  /** How long GET /metrics keeps the database's figures (`METRICS_DATABASE_MAX_AGE_MS`); 0: never. */
  readonly metricsDatabaseMaxAgeMs?: number;
  /** The shared limits' key prefix (`REDIS_KEY_PREFIX`): test runs sharing a Redis never meet. */
  readonly redisKeyPrefix?: string;
  /** The read replica's monitor poll, in ms (`REPLICA_POLL_MS`). */
  readonly replicaPollMs?: number;
}

/** The read replica and the positions of the last writes (src/replica/). */
export interface ReplicaReads {
  readonly replica: Replica;
  readonly positions: Positions;
}

export interface RequestContext {
  readonly request: Request;
  /** Field `name` (lower case) of the request, as `Headers.get()` gives it; `null` when absent. */
  header(name: string): string | null;
  /**
   * The request's `If-None-Match` (GET, HEAD) and `If-Match` (on a route whose doc says `ifMatch`), parsed
   * once before the handler runs: a malformed one was answered 400 already.
   */
  readonly conditions: Conditions;
  readonly url: URL;
  readonly params: Params;
  /** The API version the request is served in: the path's prefix, else 1 (contract §8). */
  readonly version: Version;
  /** The negotiated media type of the response body (contract §8); `application/json` outside the API versions. */
  readonly contentType: string;
  readonly requestId: string;
  /** The request body, already read within the limits (empty for GET and HEAD). */
  readonly body: Uint8Array;
  /** Set on every route that needs a scope; `undefined` on public routes. */
  readonly principal: Principal | undefined;
  /** The service's parts a handler may use: all but the database, which it reaches only through `db`. */
  readonly services: HandlerServices;
  /**
   * The database for this request: with an Idempotency-Key, bound to the
   * savepoint whose effect commits with the stored result (so a handler
   * cannot write outside it); otherwise a handle of the request's own on
   * the pool. A write of several statements runs them in `db.begin()`.
   */
  readonly db: Db;
}

/** `Services` without the pool: a handler's statements go through `RequestContext.db`. */
export type HandlerServices = Omit<Services, 'db'>;

export type Handler = (ctx: RequestContext) => Promise<Response>;

/** What a route's keyed POST in one statement did: found its key already used, or did the work. */
export type OneStatement = { readonly claim: ClaimRow } | { readonly respond: Handler };

export interface RouteSpec {
  readonly method: Method;
  readonly pattern: string;
  /** `public`, or the scope a token must carry (contract §4, §6). */
  readonly auth: 'public' | Scope;
  /**
   * On a public route: a credential of its own that it checks (GET /metrics and `METRICS_TOKEN`), throwing 401
   * when `authorization` does not carry it. The authorize stage runs it, so that a refused credential counts
   * as a failed authentication of the client address (contract §10) like a refused token.
   */
  readonly credential?: (authorization: string | null, services: HandlerServices) => void;
  readonly handler: Handler;
  /** `false` for routes outside the API versions (health): no prefix, no negotiation. */
  readonly versioned?: boolean;
  /** `Cache-Control` of a successful GET or HEAD (contract §9); `no-store` when absent. */
  readonly cache?: CachePolicy;
  /**
   * `false`: a successful answer is not counted against any rate limit and
   * carries no rate-limit fields (GET /metrics, which a scraper polls); a
   * refusal (401, say) still counts against the client address. `'never'`:
   * no answer is counted, refused with 429 or given rate-limit fields,
   * whatever its status (contract §10: a load balancer's health checks must
   * never take a backend out). `'unless-token'`: `true` while the route is open to
   * anyone, `false` once the server is given a token for it (GET /metrics and
   * `METRICS_TOKEN`, contract §13). Default `true`.
   */
  readonly rateLimited?: boolean | 'never' | 'unless-token';
  /**
   * `true`: a GET or HEAD of the route may read from the replica (contract §17), when one is in use and has
   * replayed the principal's last write. Tokens, idempotency keys, events and webhooks never do.
   */
  readonly replica?: boolean;
  /** contract §7: every POST takes an Idempotency-Key (`optional` by default); `required` on payments. */
  readonly idempotency?: 'optional' | 'required';
  /**
   * `true`: the handler throws a refusal (4xx) only before its first write, so a keyed POST of the route runs in
   * the idempotency transaction itself, without a savepoint (one round trip and one subtransaction fewer). Any
   * other error rolls the whole transaction back either way. Default `false`: the handler runs in a savepoint,
   * and a refusal thrown after a write rolls that write back before the refusal is stored.
   */
  readonly refusesBeforeWriting?: boolean;
  /**
   * A keyed POST of the route in one statement of its own transaction (one round trip): the key claimed, the
   * work done and its answer stored together. It gives the claim of a key already used (answered as the
   * idempotency stage answers any), or the handler that answers the request it did (the conditional stage
   * finishes that answer, which must be exactly what the statement stored); `undefined` runs the request the
   * ordinary way, which decides and stores a refusal (a body, a rule).
   */
  readonly keyedInOneStatement?: (ctx: RequestContext, request: IdempotentRequest) => Promise<OneStatement | undefined>;
  /**
   * The entity tag the handler's 200 will carry, found without building the
   * representation (contract §9: an order's revision). When given, a GET or HEAD
   * with `If-None-Match` is answered 304 from it alone, before the handler
   * runs; the handler must then set the same tag as its `ETag`. It refuses
   * (404) exactly as the handler would.
   */
  readonly currentTag?: (ctx: RequestContext) => Promise<string>;
  /** What the OpenAPI document says of this route (src/openapi/document.ts). */
  readonly doc: RouteDoc;
}

/** The principal of a route that declared a scope; a route marked public that calls this is a bug. */
export function principalOf(ctx: RequestContext): Principal {
  if (ctx.principal === undefined) throw new Error(`route ${ctx.url.pathname} needs a principal but is public`);
  return ctx.principal;
}
