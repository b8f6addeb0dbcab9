/** Every route of the service, as data (src/pipeline/pipeline.ts wraps them all). */
import type { RouteSpec } from '../pipeline/context.ts';
import { productRoutes } from '../catalog/routes.ts';
import { healthRoutes } from '../ops/health.ts';
import { eventRoutes } from '../events/routes.ts';
import { webhookRoutes } from '../webhooks/routes.ts';
import { openApiRoute } from '../pages/openapi.ts';
import { pageRoutes } from '../pages/routes.ts';
import { orderItemRoutes, orderRoutes } from '../orders/routes.ts';
import { paymentRoutes } from '../payments/routes.ts';
import { userRoutes } from '../users/routes.ts';
import { metricsRoute } from '../ops/metrics.ts';

/**
 * contract §17: the GETs (and so HEADs) of these resources may read from a replica; every other route, and the
 * reads of tokens, idempotency keys, events and webhooks, stays on the primary.
 */
const replicaReads = (specs: readonly RouteSpec[]): RouteSpec[] =>
  specs.map((spec) => (spec.method === 'GET' ? { ...spec, replica: true } : spec));

const api: readonly RouteSpec[] = [
  ...healthRoutes,
  ...replicaReads(productRoutes),
  ...replicaReads(userRoutes),
  ...replicaReads(orderRoutes),
  ...replicaReads(orderItemRoutes),
  ...replicaReads(paymentRoutes),
  ...eventRoutes,
  ...webhookRoutes,
  metricsRoute,
  ...pageRoutes,
];

export const routes: readonly RouteSpec[] = [...api, openApiRoute(api)];
