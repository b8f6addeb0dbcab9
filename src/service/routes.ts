/** Every route of the service, as data (src/pipeline/pipeline.ts wraps them all). */
import type { RouteSpec } from '../pipeline/context.ts';
import { productRoutes } from '../catalog/products.ts';
import { healthRoutes } from '../ops/health.ts';
import { eventRoutes } from '../events/routes.ts';
import { webhookRoutes } from '../webhooks/endpoints.ts';
import { openApiRoute } from '../pages/openapi.ts';
import { pageRoutes } from '../pages/routes.ts';
import { orderItemRoutes } from '../orders/items.ts';
import { orderRoutes } from '../orders/orders.ts';
import { paymentRoutes } from '../payments/payments.ts';
import { userRoutes } from '../users/users.ts';
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
