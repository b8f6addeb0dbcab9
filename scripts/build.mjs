// `make build`: the service compiled once into plain JavaScript, so that
// production starts without transpiling TypeScript (docs/operations.md,
// "Running the built program"). One ES module, dist/orders.mjs, bundled by
// esbuild from src/entry.ts with its dependencies, except the embedded
// database's packages: PGlite finds its wasm and data files beside its own
// modules, so it is loaded from node_modules. The SQL files are read from
// sql/ at run time (src/paths.ts), as from the sources.
import { build } from 'esbuild';

const started = performance.now();
const result = await build({
  entryPoints: ['src/entry.ts'],
  outfile: 'dist/orders.mjs',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: ['@electric-sql/pglite', '@electric-sql/pglite-socket'],
  // Bundled CommonJS modules call require(): give them node's.
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  sourcemap: 'linked',
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
});
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
process.stdout.write(`build: dist/orders.mjs (${Math.round(bytes / 1024)} KiB with its source map) in ${Math.round(performance.now() - started)} ms\n`);
