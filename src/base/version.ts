// Imported, not read from disk, so that the built program carries it inline and needs no package.json beside it.
import pkg from '../../package.json' with { type: 'json' };

/** The service's version, from package.json. */
export const VERSION: string = pkg.version;
