/**
 * Rate limits (contract §10): the windows, this process's own tables or the shared ones in Redis (§17), and the
 * address limit stage. A token's requests count against its user (authorize); every other counted request counts
 * against its client address, here, once its answer is known, so that guessing tokens or paths is limited too.
 */
import type { Config } from '../../config/config.ts';
import { HttpError, problemResponse } from '../../http/problem.ts';
import {
  addressGroup,
  createRateLimiter,
  DEFAULT_MAX_KEYS,
  rateLimitField,
  type RateDecision,
} from '../../http/rate-limit.ts';
import { fieldsOf } from '../../http/response.ts';
import type { LimitTable, SharedLimits } from '../../limits/shared-limits.ts';
import type { HttpMetrics } from '../../metrics/http-metrics.ts';
import { pass, type Stage } from '../compose.ts';
import type { RouteSpec } from '../context.ts';
import type { Answer } from '../answer.ts';
import type { Exchange } from '../exchange.ts';

export interface Limits {
  /** The `RateLimit-Policy` field value. */
  readonly policy: string;
  /** Counts one request of `key` in `table`'s window; a refused one is counted in the metrics too. */
  count(table: LimitTable, key: string): Promise<RateDecision>;
  /** As `count`, at once, when the windows are this process's own; `undefined`, nothing counted, when shared. */
  countNow(table: LimitTable, key: string): RateDecision | undefined;
  /** How `route` is limited (`RouteSpec.rateLimited`, with `'unless-token'` settled). */
  limited(route: RouteSpec | undefined): boolean | 'never';
  /** The 429 for a credential from `address` while its failed authentications are past the limit, else `undefined`. */
  barred(address: string): RateDecision | undefined;
  /** Counts one failed authentication of `address`; the 401's `RateLimit` fields report the decision. */
  failed(address: string): Promise<RateDecision>;
}

/** The limits of `config`; `undefined` when `RATE_LIMIT` is off. */
export function createLimits(
  config: Config,
  metrics: HttpMetrics,
  shared: SharedLimits | undefined,
  maxKeys = DEFAULT_MAX_KEYS,
): Limits | undefined {
  if (config.rateLimit === undefined) return undefined;
  // Two tables: a flood from new addresses fills only the addresses' one, and never pushes an authenticated
  // user into its shared overflow window. Users need a token an admin made: ten times the room of addresses.
  const tables = {
    users: createRateLimiter(config.rateLimit, undefined, maxKeys * 10),
    addresses: createRateLimiter(config.rateLimit, undefined, maxKeys),
    failures: createRateLimiter(config.rateLimit, undefined, maxKeys),
  };
  const bars = createBars(maxKeys);
  const reported = (table: LimitTable, decision: RateDecision) => {
    if (!decision.allowed) metrics.rateLimited(table === 'users' ? 'user' : 'address');
    return decision;
  };
  const local = (table: LimitTable, key: string) => reported(table, tables[table].consume(key));
  // With REDIS_URL the windows are shared, and these tables are the fallback.
  const countNow = (table: LimitTable, key: string) => (shared === undefined ? local(table, key) : undefined);
  const count = async (table: LimitTable, key: string) =>
    shared === undefined ? local(table, key) : reported(table, await shared.consume(table, key, tables[table]));
  return {
    policy: tables.users.policy,
    count,
    countNow,
    barred(address) {
      // Nothing barred (nearly always): no address group to make.
      if (bars.empty) return undefined;
      const decision = bars.barred(addressGroup(address));
      if (decision !== undefined) metrics.rateLimited('address');
      return decision;
    },
    async failed(address) {
      const group = addressGroup(address);
      const decision = await count('failures', group);
      // Past the limit, the address's next credentials are refused unread until its window ends: in this process
      // at once, and in another (with REDIS_URL) from its own first failure past the shared count.
      if (!decision.allowed) bars.bar(group, decision.resetSeconds);
      return decision;
    },
    // contract §13: GET /metrics is limited like any anonymous request, unless METRICS_TOKEN guards it.
    limited: (route) =>
      route?.rateLimited === 'unless-token' ? config.metricsToken === undefined : (route?.rateLimited ?? true),
  };
}

/** Addresses past the failure limit, each until its window ends; past `maxKeys`, the oldest is let go first. */
function createBars(maxKeys: number) {
  const until = new Map<string, number>();
  return {
    get empty() {
      return until.size === 0;
    },
    barred(group: string): RateDecision | undefined {
      const end = until.get(group);
      if (end === undefined) return undefined;
      const msLeft = end - performance.now();
      if (msLeft > 0) return { allowed: false, remaining: 0, resetSeconds: Math.max(1, Math.ceil(msLeft / 1000)) };
      until.delete(group);
      return undefined;
    },
    bar(group: string, seconds: number): void {
      until.delete(group);
      if (until.size >= maxKeys) until.delete(until.keys().next().value as string);
      until.set(group, performance.now() + seconds * 1000);
    },
  };
}

/**
 * Counts a request that no route counted against its client address, refusing it with 429 past the limit, then
 * sets the `RateLimit` fields. Health checks are never counted; an exempt route's success (GET /metrics) and a
 * CORS preflight's 204 are not, but their refusals are.
 */
export function addressLimit(limits: Limits | undefined): Stage<Exchange, Answer> {
  if (limits === undefined) return pass();
  const reported = (answer: Answer, rate: RateDecision | undefined): Answer => {
    if (rate !== undefined) {
      const headers = fieldsOf(answer.response);
      headers.set('ratelimit-policy', limits.policy);
      headers.set('ratelimit', rateLimitField(rate));
    }
    return answer;
  };
  const counted = async (x: Exchange, answer: Answer): Promise<Answer> => {
    const rate = await limits.count('addresses', addressGroup(x.address));
    if (!rate.allowed) answer.response = problemResponse(rateLimited(rate), x.path, x.requestId);
    return reported(answer, rate);
  };
  const limit = (x: Exchange, answer: Answer): Answer | Promise<Answer> => {
    const { status } = answer.response;
    const limited = limits.limited(x.route);
    const exempt =
      limited === 'never' || (status < 400 && (limited === false || (x.preflight && x.match.kind === 'options')));
    // The authorize stage's decision, when it counted the request; else this one's.
    return answer.rate === undefined && !exempt ? counted(x, answer) : reported(answer, answer.rate);
  };
  // Not an async function: a request waiting inward holds a callback here, not a suspended frame.
  return (x, next) => next(x).then((answer) => limit(x, answer));
}

export function rateLimited(decision: RateDecision): HttpError {
  return new HttpError(429, 'rate-limited', {
    detail: `Too many requests; try again in ${decision.resetSeconds} s.`,
    headers: { 'retry-after': String(decision.resetSeconds) },
  });
}
