/**
 * The embedded database (contract §1): PGlite, PostgreSQL compiled to
 * WebAssembly, served on a private Unix socket by pglite-socket so that the
 * service reaches it through the same `postgres` driver and SQL as a real
 * server.
 *
 * PGlite is single-process: a lock file in the data directory keeps a
 * second process (the command-line tool while the server runs, say) from
 * opening the same files.
 *
 * Small (contract §16): a new data directory is written from a template
 * (./embedded-template.ts) rather than made by `initdb` in this process, and
 * PostgreSQL runs with the memory settings of `SETTINGS`.
 */
import { PGlite, type PGliteOptions } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import sea from 'node:sea';
import { setFlagsFromString } from 'node:v8';
import { join, resolve } from 'node:path';
import { brotliDecompressSync } from 'node:zlib';
import { MARKER, readTemplate, writeTemplate } from './embedded-template.ts';
import { EmbeddedDatabaseError } from './errors.ts';

export interface EmbeddedDatabase {
  /** Path of the Unix socket, for `postgres({ path })`. */
  readonly socketPath: string;
  /** True when this start created the database (its files did not exist before). */
  readonly created: boolean;
  /** Stops the socket server and closes PGlite, flushing its files. */
  close(): Promise<void>;
}

const LOCK_FILE = 'orders.lock';

/**
 * PostgreSQL's memory settings, passed on its command line so that they hold
 * for a data directory made by an earlier version too (its postgresql.conf
 * says `shared_buffers = 128MB`). WebAssembly memory never shrinks and
 * PostgreSQL zeroes its shared memory at start, so all of it stays resident:
 * a buffer pool of 8 MB rather than 128 MB (the files it would cache stay in
 * the system's page cache), and index builds (migrations) of at most 16 MB
 * rather than 64 MB.
 */
const SETTINGS = ['shared_buffers=8MB', 'maintenance_work_mem=16MB'];

/**
 * PostgreSQL stays in V8's baseline WebAssembly code (Liftoff) and is never
 * recompiled by the optimising compiler (TurboFan): that recompilation costs
 * 40 to 70 MB that stay with the process, and more processor time than it
 * saves (docs/operations.md, "The embedded database's memory"). These change
 * how WebAssembly is compiled from now on, nothing else. Set here, before
 * PGlite compiles its module, rather than on node's command line: `make run`,
 * the built programs and the tests each start node their own way.
 */
const WASM_FLAGS = ['--no-wasm-tier-up', '--no-wasm-dynamic-tiering'];

/**
 * PGlite's WebAssembly module and file-system bundle. PGlite finds them
 * beside its own modules in node_modules; the single executable carries them
 * as assets (scripts/build.mjs) and hands them over through PGlite's options.
 * Not `initdb.wasm`: the executable always has the data-directory template.
 */
async function pgliteAssets(): Promise<PGliteOptions> {
  if (!sea.isSea()) return {};
  // The global WebAssembly object (its types come with the DOM library, not loaded here).
  const { compile } = (globalThis as unknown as { WebAssembly: { compile(bytes: ArrayBuffer): Promise<unknown> } })
    .WebAssembly;
  const wasm = await compile(sea.getRawAsset('pglite/pglite.wasm') as ArrayBuffer);
  // One copy of the bundle, which PGlite's file system keeps as the files' contents: the raw asset is read-only
  // memory, and a Blob (getAssetAsBlob) would be copied twice, once into it and once out by `arrayBuffer()`,
  // the one method PGlite calls. 12 MB less resident than the Blob.
  const bundle = (sea.getRawAsset('pglite/pglite.data') as ArrayBuffer).slice(0);
  return {
    pgliteWasmModule: wasm as PGliteOptions['pgliteWasmModule'],
    fsBundle: { arrayBuffer: async () => bundle } as unknown as Blob,
  };
}

/**
 * PGlite's options for the data directory `dataDir` (`undefined`: in memory),
 * whose files this start `creates`: written here from the template, or, in
 * memory, loaded from it by PGlite. Without a template, PGlite runs `initdb`.
 */
async function pgliteOptions(dataDir: string | undefined, creates: boolean): Promise<PGliteOptions> {
  for (const flag of WASM_FLAGS) setFlagsFromString(flag);
  const options: PGliteOptions = {
    ...(await pgliteAssets()),
    startParams: [...PGlite.defaultStartParams, ...SETTINGS.flatMap((setting) => ['-c', setting])],
  };
  const template = creates ? readTemplate() : undefined;
  if (template === undefined) return options;
  if (dataDir !== undefined) await writeTemplate(template, dataDir);
  else options.loadDataDir = new Blob([brotliDecompressSync(template)], { type: 'application/x-tar' });
  return options;
}

/**
 * Opens the embedded database in `dataDir`, or in memory when `dataDir` is
 * `undefined`, and serves it on a socket accepting `maxConnections`.
 */
export async function openEmbedded(dataDir: string | undefined, maxConnections: number): Promise<EmbeddedDatabase> {
  let created = true;
  let releaseLock = () => {};
  if (dataDir !== undefined) {
    const dir = resolve(dataDir);
    mkdirSync(dir, { recursive: true });
    created = !existsSync(join(dir, MARKER));
    releaseLock = lock(dir);
  }
  const socketDir = mkdtempSync(join(tmpdir(), 'orders-db-'));
  const socketPath = join(socketDir, '.s.PGSQL.5432');
  let db: PGlite | undefined;
  let server: PGLiteSocketServer | undefined;
  try {
    const path = dataDir === undefined ? undefined : resolve(dataDir);
    db = await PGlite.create(path ?? 'memory://', await pgliteOptions(path, created));
    // One more than the pool, so a migration's reserved connection never starves it.
    server = new PGLiteSocketServer({ db, path: socketPath, maxConnections: maxConnections + 2 });
    await server.start();
  } catch (error) {
    await db?.close().catch(() => {});
    rmSync(socketDir, { recursive: true, force: true });
    releaseLock();
    throw error;
  }
  const openedDb = db;
  const openedServer = server;
  return {
    socketPath,
    created,
    async close() {
      await openedServer.stop();
      await openedDb.close();
      rmSync(socketDir, { recursive: true, force: true });
      releaseLock();
    },
  };
}

/** Takes the data directory's lock file, or throws when a live process holds it. */
function lock(dir: string): () => void {
  const file = join(dir, LOCK_FILE);
  if (existsSync(file)) {
    const pid = Number(readFileSync(file, 'utf8').trim());
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid)) {
      throw new EmbeddedDatabaseError(
        `the embedded database in ${dir} is in use by process ${pid}; stop it first (PGlite serves one process ` +
          'at a time)',
      );
    }
  }
  writeFileSync(file, `${process.pid}\n`);
  return () => rmSync(file, { force: true });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
