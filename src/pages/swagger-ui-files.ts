/**
 * The files of the `swagger-ui-dist` package that `/docs` serves, read from
 * the installed package, or, in the single executable (`dist/orders`, where
 * there is no node_modules), from the assets it carries under
 * `swagger-ui-dist/<name>` (scripts/build.mjs puts them there, from the same
 * list, `swagger-ui-files.json`). As src/db/sql-files.ts does for the SQL.
 *
 * The package is found by node's resolution from this module (or from the
 * built `dist/orders.mjs`, which runs from the checkout): through
 * `createRequire`, which esbuild leaves alone, so the 1.7 MB bundle is never
 * bundled into the service.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import sea from 'node:sea';
import FILES from './swagger-ui-files.json' with { type: 'json' };

/** The names of the files served, as `/docs/<name>`. */
export const SWAGGER_UI_FILES: readonly string[] = FILES;

const inExecutable = sea.isSea();
// Resolved at start-up, so a missing package stops the server at once rather than at the first /docs.
const packageDir = inExecutable
  ? undefined
  : dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** The bytes of `name`, one of `SWAGGER_UI_FILES`. */
export function readSwaggerUiFile(name: string): Uint8Array {
  if (!SWAGGER_UI_FILES.includes(name)) throw new Error(`${name} is not one of the swagger-ui-dist files served`);
  // The executable's asset is mapped in memory, not copied; it is only ever read.
  if (packageDir === undefined) return new Uint8Array(sea.getRawAsset(`swagger-ui-dist/${name}`) as ArrayBuffer);
  return readFileSync(join(packageDir, name));
}
