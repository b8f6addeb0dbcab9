/**
 * A route's plan: what the stages do for its requests, decided once from its
 * spec when the app is made, before any request (as PostgREST plans an action
 * before it runs a statement). A stage reads these values, never the OpenAPI
 * document nor a default of its own: each decision is made here, once.
 */
import type { CachePolicy } from '../http/semantics.ts';
import type { RouteSpec } from './context.ts';

export interface RoutePlan {
  /** The request may change what is stored: a method other than GET and HEAD (the replica stage). */
  readonly writes: boolean;
  /** contract §4: the success has no body (204), and is never refused for the request's `Accept`. */
  readonly noContent: boolean;
  /** contract §9: the route reads `If-Match` (a GET or HEAD reads `If-None-Match`). */
  readonly ifMatch: boolean;
  /** contract §9: `Cache-Control` of a successful GET or HEAD. */
  readonly cache: CachePolicy;
  /** contract §7: how a POST takes an `Idempotency-Key`; `none` for other methods. */
  readonly idempotency: 'none' | 'optional' | 'required';
  /**
   * How a keyed POST's handler runs in the key's transaction: in a savepoint, so that a refusal after a write
   * rolls the write back before the refusal is stored; or in the transaction itself (`refusesBeforeWriting`).
   */
  readonly inSavepoint: boolean;
  /** contract §17: a GET or HEAD may read from the replica, once it has replayed the principal's last write. */
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
