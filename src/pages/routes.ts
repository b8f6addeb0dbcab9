/** The routes outside the API proper (contract §16): the index, the API reference and the problem pages. */
import type { RouteSpec } from '../pipeline/context.ts';
import { docsRoutes } from './docs.ts';
import { problemRoute } from './problems.ts';
import { rootRoute } from './root.ts';

export const pageRoutes: readonly RouteSpec[] = [rootRoute, ...docsRoutes, problemRoute];
