/** What the pipeline hands a route's handler, and what a route declares of itself. */
import type { AdmissionOptions } from '../http/admission.ts';
import type { LoopWatch } from '../http/loop-watch.ts';
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

/** The service's parts, given to `createApp()`. */
export interface Services {
  readonly config: Config;
  readonly db: Database;
  readonly log: Logger;
  readonly authenticator: Authenticator;
  /** contract §4: the keys the cursors of collection pages are sealed with, shared by every process. */
  readonly cursorKeys: CursorKeys;
  /** How long a request may wait for the database in all (contract §11); `DATABASE_DEADLINE_MS` by default. */
  readonly databaseDeadlineMs?: number;
  readonly tuning?: Tuning;
  /** What the pipeline counts for GET /metrics; `createApp()` makes it when not given. */
  readonly metrics?: HttpMetrics;
  /** With `REDIS_URL` and a rate limit: the windows every process shares; absent, each process counts its own. */
  readonly sharedLimits?: SharedLimits;
  /** With `DATABASE_READ_URL` (contract §17): the read replica; absent, every statement goes to the primary. */
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
  /**
   * What tells an overloaded event loop: `true`, the process's (`processLoop()`, as the program's entry asks on a
   * PostgreSQL server), or one given (tests); `undefined` or `false` (an app made by a test, whose loop is the
   * test's too; the embedded database) none, nothing refused for it.
   */
  readonly loopWatch?: LoopWatch | boolean;
  /** Turns for the database work (src/http/admission.ts), over its defaults; `false`: none, nothing waits. */
  readonly admission?: Partial<AdmissionOptions> | false;
}

/** The read replica and the positions of the last writes (src/replica/). */
export interface ReplicaReads {
  readonly replica: Replica;
  readonly positions: Positions;
}

/** What a handler is given of its request. */
export interface RequestContext {
  readonly request: Request;
  /** Field `name` (lower case) of the request, as `Headers.get()` gives it; `null` when absent. */
  header(name: string): string | null;
  /** `If-None-Match` (GET, HEAD) and `If-Match` (where `doc.ifMatch`), parsed: a malformed one was answered 400. */
  readonly conditions: Conditions;
  readonly url: URL;
  readonly params: Params;
  /** The API version the request is served in: the path's prefix, else 1 (contract §8). */
  readonly version: Version;
  /** The negotiated media type of the response body ; `application/json` outside the API versions. */
  readonly contentType: string;
  readonly requestId: string;
  /** The request body, already read within the limits (empty for GET and HEAD). */
  readonly body: Uint8Array;
  /** Set on every route that needs a scope; `undefined` on public routes. */
  readonly principal: Principal | undefined;
  readonly services: HandlerServices;
  /**
   * With an Idempotency-Key, the savepoint that commits with the stored result (a handler cannot write outside it);
   * else the request's own handle. A write of several statements runs in `db.begin()`.
   */
  readonly db: Db;
}

/** `Services` without the pool: a handler's statements go through `RequestContext.db`. */
export type HandlerServices = Omit<Services, 'db'>;

export type Handler = (ctx: RequestContext) => Promise<Response>;

/** What a route's keyed POST in one statement did: found its key already used, or did the work. */
export type OneStatement = { readonly claim: ClaimRow } | { readonly respond: Handler };

/** What a route declares of itself: the pipeline plans its requests from it (src/pipeline/plan.ts). */
export interface RouteSpec {
  readonly method: Method;
  readonly pattern: string;
  /** `public`, or the scope a token must carry (contract §6). */
  readonly auth: 'public' | Scope;
  /**
   * On a public route: a credential of its own (GET /metrics and `METRICS_TOKEN`), throwing 401 when `authorization`
   * lacks it. The authorize stage runs it, so a refusal counts as a failed authentication like a refused token.
   */
  readonly credential?: (authorization: string | null, services: HandlerServices) => void;
  readonly handler: Handler;
  /** `false` for routes outside the API versions (health): no prefix, no negotiation. */
  readonly versioned?: boolean;
  /** `Cache-Control` of a successful GET or HEAD; `no-store` when absent. */
  readonly cache?: CachePolicy;
  /**
   * Default `true`. `false`: a success is not counted and has no rate-limit fields (GET /metrics, polled by a
   * scraper); a refusal still counts. `'never'`: no answer is counted or limited (contract §10: health checks must
   * never take a backend out). `'unless-token'`: `true` until the server has a token for it (`METRICS_TOKEN`).
   */
  readonly rateLimited?: boolean | 'never' | 'unless-token';
  /** `true`: a GET or HEAD may read from the replica; tokens, idempotency keys, events and webhooks never do. */
  readonly replica?: boolean;
  /** `'exempt'`: served however overloaded the process is (health, readiness, metrics: contract §14). */
  readonly overload?: 'exempt';
  /** contract §7: every POST takes an Idempotency-Key (`optional` by default); `required` on payments. */
  readonly idempotency?: 'optional' | 'required';
  /** `true`: the handler refuses (4xx) only before its first write, so a keyed POST needs no savepoint. */
  readonly refusesBeforeWriting?: boolean;
  /**
   * A keyed POST in one statement: key claimed, work done and answer stored together. It gives the claim of a key
   * already used, or the handler answering what it did (finished as stored); `undefined`: the ordinary way.
   */
  readonly keyedInOneStatement?: (ctx: RequestContext, request: IdempotentRequest) => Promise<OneStatement | undefined>;
  /**
   * The tag the handler's 200 will carry, found without building it (contract §9: an order's revision): a matching
   * `If-None-Match` is 304 before the handler runs. It must match the handler's `ETag` and refuse as it does.
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
