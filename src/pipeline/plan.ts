/** A route's plan: decided once from its spec when the app is made; the stages read it, never the OpenAPI document. */
import type { CachePolicy } from '../http/semantics.ts';
import type { RouteSpec } from './context.ts';

export interface RoutePlan {
  /** A method other than GET and HEAD: it may change what is stored. */
  readonly writes: boolean;
  /** contract §4: the success has no body (204), and is never refused for the request's `Accept`. */
  readonly noContent: boolean;
  /** The route reads `If-Match` (contract §9). */
  readonly ifMatch: boolean;
  readonly cache: CachePolicy;
  /** How a POST takes an `Idempotency-Key`; `none` for other methods. */
  readonly idempotency: 'none' | 'optional' | 'required';
  /** A keyed POST's handler runs in a savepoint: a refusal after a write undoes the write before it is stored. */
  readonly inSavepoint: boolean;
  /** A GET or HEAD that may read from the replica. */
  readonly replica: boolean;
}

/** A route as the pipeline serves it: its spec, and its plan. */
export interface PlannedRoute extends RouteSpec {
  readonly plan: RoutePlan;
}

/** The plan of `spec`'s requests. */
export function planOf(spec: RouteSpec): RoutePlan {
  const safe = spec.method === 'GET' || spec.method === 'HEAD';
  return Object.freeze({
    writes: !safe,
    noContent: spec.doc.success.status === 204,
    ifMatch: spec.doc.ifMatch === true,
    cache: spec.cache ?? 'no-store',
    idempotency: spec.method === 'POST' ? (spec.idempotency ?? 'optional') : 'none',
    inSavepoint: spec.refusesBeforeWriting !== true,
    replica: safe && spec.replica === true,
  });
}

/** `spec` with its plan. */
export function planned(spec: RouteSpec): PlannedRoute {
  return Object.freeze({ ...spec, plan: planOf(spec) });
}
