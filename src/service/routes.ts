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

const api: readonly RouteSpec[] = [
  ...healthRoutes,
  ...productRoutes,
  ...userRoutes,
  ...orderRoutes,
  ...orderItemRoutes,
  ...paymentRoutes,
  ...eventRoutes,
  ...webhookRoutes,
  metricsRoute,
  ...pageRoutes,
];

export const routes: readonly RouteSpec[] = [...api, openApiRoute(api)];
