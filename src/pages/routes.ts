/** The routes outside the API proper (contract §16): the index, the API reference, the problem pages, their index. */
import type { RouteSpec } from '../pipeline/context.ts';
import { docsRoutes } from './docs.ts';
import { problemIndexRoute } from './problem-index.ts';
import { problemRoute } from './problems.ts';
import { rootRoute } from './root.ts';

export const pageRoutes: readonly RouteSpec[] = [rootRoute, ...docsRoutes, problemIndexRoute, problemRoute];
