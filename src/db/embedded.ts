/**
 * The embedded database (contract §1): PGlite, PostgreSQL compiled to
 * WebAssembly, served on a private Unix socket by pglite-socket so that the
 * service reaches it through the same `postgres` driver and SQL as a real
 * server.
 *
 * PGlite is single-process: a lock file in the data directory keeps a
 * second process (the command-line tool while the server runs, say) from
 * opening the same files.
 */
import { PGlite, type PGliteOptions } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import sea from 'node:sea';
import { EmbeddedDatabaseError } from './errors.ts';
import { join, resolve } from 'node:path';

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
 * PGlite's WebAssembly modules and file-system bundle. PGlite finds them
 * beside its own modules in node_modules; the single executable carries them
 * as assets (scripts/build.mjs) and hands them over through PGlite's options.
 */
async function pgliteAssets(): Promise<PGliteOptions> {
  if (!sea.isSea()) return {};
  // The global WebAssembly object (its types come with the DOM library, not loaded here).
  const { compile } = (globalThis as unknown as { WebAssembly: { compile(bytes: ArrayBuffer): Promise<unknown> } })
    .WebAssembly;
  const [pglite, initdb] = await Promise.all([
    compile(sea.getRawAsset('pglite/pglite.wasm') as ArrayBuffer),
    compile(sea.getRawAsset('pglite/initdb.wasm') as ArrayBuffer),
  ]);
  return {
    pgliteWasmModule: pglite as PGliteOptions['pgliteWasmModule'],
    initdbWasmModule: initdb as PGliteOptions['initdbWasmModule'],
    fsBundle: sea.getAssetAsBlob('pglite/pglite.data'),
  };
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
    created = !existsSync(join(dir, 'PG_VERSION'));
    releaseLock = lock(dir);
  }
  const socketDir = mkdtempSync(join(tmpdir(), 'orders-db-'));
  const socketPath = join(socketDir, '.s.PGSQL.5432');
  let db: PGlite | undefined;
  let server: PGLiteSocketServer | undefined;
  try {
    db = await PGlite.create(dataDir === undefined ? 'memory://' : resolve(dataDir), await pgliteAssets());
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
