/**
 * The request pipeline: every route passes the same fixed list of stages (src/pipeline/stages/), built once
 * here, so none can skip a cross-cutting rule (contract §5–§13, §16, §17). Outer to inner:
 *
 *   observe → cors → compression → fields → shedding → address limit → problems → deadline
 *   → route → negotiate → authorize → work: [body → admission → replica → preconditions
 *   → idempotency → conditional → handler]
 *
 * A stage's decision for the stages inside it is an exchange field it writes before `next()` (exchange.ts);
 * what an outer stage reports comes back with the answer or the error (answer.ts). Everything before the body
 * stage is decided from the request's head (contract §11): a request refused there has none of its body read.
 * The problems stage turns every error below it into an answer, so the stages outside it always see a
 * `Response`. docs/architecture.md draws a GET and a keyed POST.
 */
import type { ClientInfo } from '../http/client-info.ts';
import { corsPolicy } from '../http/cors.ts';
import { trustedProxies } from '../http/client-address.ts';
import { createRouter, type Route } from '../http/router.ts';
import { versionPolicy } from '../http/semantics.ts';
import { createHttpMetrics } from '../metrics/http-metrics.ts';
import { attempt, compose, type Stage } from './compose.ts';
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
import { shedding } from './stages/overload.ts';
import { type LoopWatch, processLoop } from '../http/loop-watch.ts';
import { admission } from './stages/admission.ts';
import { ADMISSION_DEFAULTS, type Admission, createAdmission } from '../http/admission.ts';
import { problems } from './stages/problems.ts';
import { replicaReads } from './stages/replica.ts';
import { negotiation, route } from './stages/route.ts';

/** The service as a function of a request, with the budget of its bodies in flight. */
export type App = ((request: Request, client: ClientInfo) => Promise<Response>) & {
  /** The bytes of the bodies in flight, against `BODY_BUDGET_BYTES` (GET /metrics). */
  readonly bodies: BodyBudget;
  /** The database's turns (GET /metrics); `undefined` when tuned off. */
  readonly turns: Admission | undefined;
};

/** A request waits at most 5 s in all for the database, then gets 503. */
export const DATABASE_DEADLINE_MS = 5_000;
/** Time a client gets to send its whole body. */
export const BODY_TIMEOUT_MS = 30_000;

/** The loop watch `tuning.loopWatch` asks for: the process's, one given, or none. */
function watchOf(asked: LoopWatch | boolean | undefined): LoopWatch | undefined {
  if (asked === true) return processLoop();
  return asked === false ? undefined : asked;
}

/**
 * The innermost stage: the route's handler, or the answer of a keyed POST done in one statement. A handler that
 * throws at once (one that is not an async function) rejects, as an async one would, so the stages around it that
 * hold something for the request (a turn, a body's share) give it back.
 */
const handler: Stage<Exchange> = (x) => attempt(answerOf, x);
const answerOf = (x: Exchange) => (x.respond ?? routeOf(x).handler)(contextOf(x));

const responseOf = (answer: Answer) => answer.response;

/** The app serving `routes` through the pipeline. */
export function createApp(given: Services, routes: readonly RouteSpec[]): App {
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
  const parts: ExchangeParts = {
    // Without TRUST_PROXY, a request pays nothing for it.
    trusted: config.trustProxy === undefined ? undefined : trustedProxies(config.trustProxy),
    proxyHeader: config.trustProxyHeader,
    router,
    database,
    operations: database.operations,
    services: { log, config, ...rest },
  };
  const limits = createLimits(config, metrics, given.sharedLimits, given.tuning?.rateLimitMaxKeys);
  const versions = versionPolicy(config);
  const bodies = createBodyBudget(config.bodyBudgetBytes, shareOf(config.bodyBudgetBytes, config.maxBodyBytes));
  const turns = given.tuning?.admission;
  const gate =
    turns === false ? undefined : createAdmission({ ...ADMISSION_DEFAULTS, ...turns }, () => performance.now());
  // The body and database stages, run by the work stage under the request's clock.
  const inner = compose<Exchange>([
    requestBody({ maxBodyBytes: config.maxBodyBytes, bodyTimeoutMs: BODY_TIMEOUT_MS, budget: bodies }),
    admission(gate, metrics),
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
    shedding(watchOf(given.tuning?.loopWatch), metrics),
    addressLimit(limits),
    problems(log),
    databaseDeadline(given.databaseDeadlineMs ?? DATABASE_DEADLINE_MS, log),
    route(),
    negotiation(versions),
    authorize(given.authenticator, limits),
    work(inner),
  ]);
  const app = (request: Request, client: ClientInfo) => run(newExchange(request, client, parts)).then(responseOf);
  return Object.assign(app, { bodies, turns: gate });
}
