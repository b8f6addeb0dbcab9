// `make test`'s test files and the programs they spawn, compiled once into plain JavaScript before the run:
//
//   node scripts/bundle-tests.mjs FILE.ts…
//
// Each FILE (a test file, src/main.ts, …) becomes dist/tests/FILE.mjs, bundled by esbuild with the project's own
// modules (the packages stay imports of node_modules), the modules they share split into chunks, with a source map
// that the coverage report follows back to the sources. Through tsx, every test process and every spawned service
// compiled its ~340 modules again (on Node 20, tsx's hooks run on a thread of their own: about a second of CPU a
// process); compiled once, the suite takes a fifth less CPU. A module keeps the URL of its source:
// `import.meta.url`, `import.meta.dirname` and `import.meta.filename` are replaced by its own file's before bundling,
// so that what it reads beside itself (sql/, fixtures, templates) is found as from the sources. A test run alone
// (`node --import tsx --test FILE`) runs the sources as before.
//
// The coverage report: a chunk's source map names several sources, each of which Node's source-map cache gives as a
// file URL; c8 checked such a name against its `include` ("src/**/*.ts") as it came and so kept none of their ranges
// never run, counting their lines as covered (patches/c8+12.0.0.patch turns the URL into a path). Nothing is
// tree-shaken, for the same reason: a line left out of the bundle would count as covered.
import { readFile, rm } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '..');
/** Where the compiled files go (dist/ is ignored by git and removed by `make clean`). */
const OUT = join(ROOT, 'dist/tests');

/** Replaces each module's `import.meta` file locations by its source's, so that the bundle reads what it read. */
const sourceLocations = {
  name: 'source-locations',
  setup(esbuild) {
    esbuild.onLoad({ filter: /\.(ts|mjs)$/ }, async ({ path }) => {
      if (path.includes('/node_modules/')) return undefined;
      const text = (await readFile(path, 'utf8'))
        .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(path).href))
        .replaceAll('import.meta.dirname', JSON.stringify(dirname(path)))
        .replaceAll('import.meta.filename', JSON.stringify(path));
      return { contents: text, loader: path.endsWith('.ts') ? 'ts' : 'js' };
    });
  },
};

const entries = process.argv.slice(2);
if (entries.length === 0) {
  console.error('usage: node scripts/bundle-tests.mjs FILE.ts…');
  process.exit(2);
}
const started = performance.now();
await rm(OUT, { recursive: true, force: true });
const result = await build({
  entryPoints: entries.map((entry) => resolve(ROOT, entry)),
  outbase: ROOT,
  outdir: OUT,
  outExtension: { '.js': '.mjs' },
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  // Tests compare errors' and classes' names: esbuild would rename one that two modules both declare.
  keepNames: true,
  // Every line of a module the tests load, used or not (the coverage report, above).
  treeShaking: false,
  sourcemap: 'linked',
  sourcesContent: false,
  logLevel: 'warning',
  plugins: [sourceLocations],
});
if (result.errors.length > 0) process.exit(1);
const seconds = ((performance.now() - started) / 1000).toFixed(1);
console.log(`${entries.length} files compiled into ${relative(ROOT, OUT)}/ in ${seconds} s`);
