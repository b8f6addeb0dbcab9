// `make build`: the service compiled once into plain JavaScript, so that
// production starts without transpiling TypeScript (docs/operations.md,
// "Running the built program"). One ES module, dist/orders.mjs, bundled by
// esbuild from src/entry.ts with its dependencies, except the embedded
// database's packages: PGlite finds its wasm and data files beside its own
// modules, so it is loaded from node_modules. The SQL files are read from
// sql/ at run time (src/paths.ts), as from the sources: one folder up from
// the bundle. Usage: node scripts/build.mjs [OUTFILE] (default dist/orders.mjs).
import { chmodSync } from 'node:fs';
import { build } from 'esbuild';

/**
 * The V8 flags the program runs with, in its #! line (make bench reads them
 * from that line): a young generation of at most 8 MB per semi-space. Node 26
 * otherwise grows it with the machine's memory, and the server's peak RSS
 * under make bench with it (204 MB against 146 MB on Node 20); throughput
 * is unchanged within the bench's noise.
 */
const RUNTIME_FLAGS = ['--max-semi-space-size=8'];

const outfile = process.argv[2] ?? 'dist/orders.mjs';
const started = performance.now();
const result = await build({
  entryPoints: ['src/entry.ts'],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: ['@electric-sql/pglite', '@electric-sql/pglite-socket'],
  // Bundled CommonJS modules call require(): give them node's.
  banner: {
    js: `#!/usr/bin/env -S node ${RUNTIME_FLAGS.join(' ')}\nimport { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);`,
  },
  sourcemap: 'linked',
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
});
chmodSync(outfile, 0o755);
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
process.stdout.write(`build: ${outfile} (${Math.round(bytes / 1024)} KiB with its source map) in ${Math.round(performance.now() - started)} ms\n`);
