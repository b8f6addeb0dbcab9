/**
 * The request pipeline: every route passes through the same fixed list of
 * stages (src/pipeline/stages/), built once here, so none can forget the
 * cross-cutting rules (contract §5–§13, §16, §17). Outer to inner:
 *
 *   observe → cors → compression → fields → address limit → problems → deadline
 *   → route → negotiate → authorize → work: [body → replica → preconditions
 *   → idempotency → conditional → handler]
 *
 * A request passes each stage once, inward, and its answer each once,
 * outward: no stage calls `next()` twice or hands another a signal beside
 * the chain. What a stage decides for the stages inside it is a field of the
 * exchange it writes before it calls `next()` (src/pipeline/exchange.ts says
 * which stage writes each); the route is found when the request arrives.
 * What an outer stage reports of an inner one's decisions (the rate decision,
 * the principal, the version) comes back with the answer, an `Answer`
 * (src/pipeline/answer.ts), or with the error on its way out.
 * The conditional stage is the one place a 2xx is finished, inside the
 * idempotency stage, which stores the finished answer.
 *
 * Everything up to the body stage is decided from the request's head alone
 * (contract §11): a request refused there (404, 405, 406, 401, 403, 429,
 * 413 by its `Content-Length`) has none of its body read.
 *
 * A stage's after-work runs on the way out, inner first: the problems stage
 * turns every error below it into an answer, so every stage outside it sees
 * a `Response` (the address limit may replace it with a 429; the fields,
 * compression, CORS and observe stages then add to whatever it is). docs/architecture.md
 * draws the path of a GET and of a keyed POST through them.
 */
import type { ClientInfo } from '../http/client-info.ts';
import { corsPolicy } from '../http/cors.ts';
import { trustedProxies } from '../http/client-address.ts';
import { createRouter, type Route } from '../http/router.ts';
import { versionPolicy } from '../http/semantics.ts';
import { createHttpMetrics } from '../metrics/http-metrics.ts';
import { compose, type Stage } from './compose.ts';
import type { RouteSpec, Services } from './context.ts';
import { planned, type PlannedRoute } from './plan.ts';
import { contextOf, newExchange, routeOf, type Exchange, type ExchangeParts } from './exchange.ts';
import { authorize } from './stages/authorize.ts';
import { databaseDeadline, requestBody, work } from './stages/body.ts';
import type { Answer } from './answer.ts';
import { createBodyBudget, shareOf, type BodyBudget } from '../http/body-budget.ts';
import { compression } from './stages/compression.ts';
import { conditional, preconditions } from './stages/conditional.ts';
import { cors } from './stages/cors.ts';
import { representationFields } from './stages/fields.ts';
import { idempotency } from './stages/idempotency.ts';
import { addressLimit, createLimits } from './stages/limits.ts';
import { observe } from './stages/observe.ts';
import { problems } from './stages/problems.ts';
import { replicaReads } from './stages/replica.ts';
import { negotiation, route } from './stages/route.ts';

export type App = ((request: Request, client: ClientInfo) => Promise<Response>) & {
  /** contract §11: the bytes of the bodies in flight, against `BODY_BUDGET_BYTES` (GET /metrics). */
  readonly bodies: BodyBudget;
};

/** contract §11: a request waits at most 5 s in all for the database, then gets 503. */
export const DATABASE_DEADLINE_MS = 5_000;
/** Time a client gets to send its whole body. */
export const BODY_TIMEOUT_MS = 30_000;

/**
 * The innermost stage: the route's handler, with what the stages found; or, for a keyed POST its route did in
 * one statement, the answer of what it did (the idempotency stage).
 */
const handler: Stage<Exchange> = (x) => (x.respond ?? routeOf(x).handler)(contextOf(x));

export function createApp(given: Services, routes: readonly RouteSpec[]): App {
  // Each route's plan, decided here once (src/pipeline/plan.ts): the stages read it.
  const router = createRouter<PlannedRoute>(
    routes.map(
      (r): Route<PlannedRoute> => ({
        method: r.method,
        pattern: r.pattern,
        handler: planned(r),
        ...(r.versioned === undefined ? {} : { versioned: r.versioned }),
      }),
    ),
  );
  const metrics = given.metrics ?? createHttpMetrics();
  const { log, config, db: database, ...rest } = { ...given, metrics };
  // What a handler sees of the services: all but the pool, which it reaches only through `ctx.db`.
  const parts: ExchangeParts = {
    // contract §16: read once; unset, it costs a request nothing.
    trusted: config.trustProxy === undefined ? undefined : trustedProxies(config.trustProxy),
    proxyHeader: config.trustProxyHeader,
    router,
    database,
    services: { log, config, ...rest },
  };
  const limits = createLimits(config, metrics, given.sharedLimits, given.tuning?.rateLimitMaxKeys);
  const versions = versionPolicy(config);
  const bodies = createBodyBudget(config.bodyBudgetBytes, shareOf(config.bodyBudgetBytes, config.maxBodyBytes));
  // The stages that work on the request's body and database, each giving a Response; the work stage runs them
  // under the request's clock and hands their answer outward, to the stages that report decisions with it.
  const inner = compose<Exchange>([
    requestBody({ maxBodyBytes: config.maxBodyBytes, bodyTimeoutMs: BODY_TIMEOUT_MS, budget: bodies }),
    replicaReads(given.reads, database, log),
    preconditions(),
    idempotency(),
    conditional(config.cacheMaxAge),
    handler,
  ]);
  const run = compose<Exchange, Answer>([
    observe(log, metrics),
    cors(config.corsOrigins === undefined ? undefined : corsPolicy(config.corsOrigins)),
    compression(),
    representationFields(versions),
    addressLimit(limits),
    problems(log),
    databaseDeadline(given.databaseDeadlineMs ?? DATABASE_DEADLINE_MS, log),
    route(),
    negotiation(versions),
    authorize(given.authenticator, limits),
    work(inner),
  ]);
  const app = async (request: Request, client: ClientInfo) => (await run(newExchange(request, client, parts))).response;
  return Object.assign(app, { bodies });
}
