/**
 * The embedded database (contract §1): PGlite (PostgreSQL compiled to WebAssembly) on a private Unix socket, so that
 * the service reaches it through the same `postgres` driver and SQL as a real server. PGlite is single-process: a
 * lock file keeps a second process (the command-line tool while the server runs, say) from opening the same files.
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
  readonly socketPath: string;
  readonly created: boolean;
  /** Stops the socket server and closes PGlite, flushing its files. */
  close(): Promise<void>;
}

const LOCK_FILE = 'orders.lock';

/**
 * PostgreSQL's memory settings, on its command line so that they hold for a data directory made by an earlier
 * version too. WebAssembly memory never shrinks and PostgreSQL zeroes its shared memory at start, so all of it
 * stays resident: a small buffer pool (the files stay in the system's page cache), and small index builds.
 */
const SETTINGS = ['shared_buffers=8MB', 'maintenance_work_mem=16MB'];

/**
 * PostgreSQL stays in V8's baseline WebAssembly code: recompiling it with TurboFan costs memory that stays with the
 * process, and more time than it saves (docs/operations.md). Set before PGlite compiles its module, not on node's
 * command line: `make run`, the built programs and the tests each start node their own way.
 */
const WASM_FLAGS = ['--no-wasm-tier-up', '--no-wasm-dynamic-tiering'];

/** PGlite's WebAssembly module and file-system bundle from the single executable's assets (not `initdb.wasm`). */
async function pgliteAssets(): Promise<PGliteOptions> {
  if (!sea.isSea()) return {};
  // The global WebAssembly object (its types come with the DOM library, not loaded here).
  const { compile } = (globalThis as unknown as { WebAssembly: { compile(bytes: ArrayBuffer): Promise<unknown> } })
    .WebAssembly;
  const wasm = await compile(sea.getRawAsset('pglite/pglite.wasm') as ArrayBuffer);
  // One copy, which PGlite keeps as the files' contents: the raw asset is read-only, and a Blob would be copied
  // twice, into it and out by `arrayBuffer()`, the one method PGlite calls.
  const bundle = (sea.getRawAsset('pglite/pglite.data') as ArrayBuffer).slice(0);
  return {
    pgliteWasmModule: wasm as PGliteOptions['pgliteWasmModule'],
    fsBundle: { arrayBuffer: async () => bundle } as unknown as Blob,
  };
}

/** PGlite's options; a directory this start `creates` comes from the template (else PGlite runs `initdb`). */
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

/** Opens the embedded database in `dataDir` (in memory when `undefined`) and serves it on a socket. */
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
