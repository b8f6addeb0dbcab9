/**
 * The service's version, `version` in package.json. Imported as a JSON
 * module rather than read from disk, so that the built program (esbuild,
 * scripts/build.mjs) carries it inline and needs no package.json beside it.
 *
 * @example
 * VERSION; // "0.1.0"
 */
import pkg from '../../package.json' with { type: 'json' };

export const VERSION: string = pkg.version;
