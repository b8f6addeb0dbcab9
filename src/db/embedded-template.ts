/**
 * The embedded database's data-directory template (contract §16): a freshly initialised, cleanly shut down PGlite
 * data directory as a Brotli-compressed tar. Running `initdb` in this process instead would cost PGlite two more
 * WebAssembly instances and heaps, memory WebAssembly never gives back. The catalog format changes with PostgreSQL,
 * so each PGlite version has its own (`node scripts/build.mjs --template`); without one, PGlite runs `initdb`.
 */
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve, sep } from 'node:path';
import sea from 'node:sea';
import { createBrotliDecompress } from 'node:zlib';
import { EmbeddedDatabaseError } from './errors.ts';

declare const SQL_FROM_BUNDLE: boolean | undefined;

/** The template's asset key in the single executable (scripts/build.mjs). */
const TEMPLATE_ASSET = 'pglite/pgdata.tar.br';
/** The file that marks a data directory as made: written last, so that an interrupted copy is made again. */
export const MARKER = 'PG_VERSION';

/** The template's folder: beside this file in the sources; `src/db/template/` seen from the built program. */
const TEMPLATE_DIR = new URL(
  typeof SQL_FROM_BUNDLE === 'boolean' && SQL_FROM_BUNDLE ? '../src/db/template/' : './template/',
  import.meta.url,
);

const templateFileName = (version: string): string => `pglite-${version}.tar.br`;

/** The installed PGlite's version, from its package.json (not in its `exports`, so found beside its entry point). */
function pgliteVersion(): string {
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const manifest = join(dirname(entry), '..', 'package.json');
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
}

/** The compressed template for the PGlite this program runs, or `undefined` when there is none. */
export function readTemplate(): Uint8Array | undefined {
  if (sea.isSea()) return new Uint8Array(sea.getRawAsset(TEMPLATE_ASSET) as ArrayBuffer);
  try {
    return readFileSync(new URL(templateFileName(pgliteVersion()), TEMPLATE_DIR));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

const BLOCK = 512;

/** A tar entry's header (POSIX ustar): the template holds only regular files and folders. */
interface Header {
  readonly path: string;
  readonly type: 'file' | 'folder';
  readonly mode: number;
  readonly size: number;
}

/** Writes the files of `template` into folder `dir`, streaming rather than holding them all; `MARKER` last. */
export async function writeTemplate(template: Uint8Array, dir: string): Promise<void> {
  const archive = createBrotliDecompress();
  archive.end(template);
  let held: Buffer = Buffer.alloc(0);
  // The file being written, its bytes still to come, then the padding to its block's end.
  let fd = -1;
  let left = 0;
  let padding = 0;
  let ended = false;
  try {
    for await (const chunk of archive as AsyncIterable<Buffer>) {
      held = held.length === 0 ? chunk : Buffer.concat([held, chunk]);
      let at = 0;
      for (;;) {
        if (left > 0) {
          const n = Math.min(left, held.length - at);
          if (writeSync(fd, held, at, n) !== n) throw new EmbeddedDatabaseError(`a short write in ${dir}`);
          at += n;
          left -= n;
          if (left > 0) break;
          closeSync(fd);
        }
        const skipped = Math.min(padding, held.length - at);
        at += skipped;
        padding -= skipped;
        if (padding > 0 || ended || held.length - at < BLOCK) break;
        const header = parseHeader(held.subarray(at, at + BLOCK), dir);
        at += BLOCK;
        if (header === undefined) ended = true;
        else if (header.type === 'folder') mkdirSync(join(dir, header.path), { recursive: true, mode: header.mode });
        else {
          fd = openSync(join(dir, header.path === MARKER ? `${MARKER}.new` : header.path), 'w', header.mode);
          left = header.size;
          padding = (BLOCK - (header.size % BLOCK)) % BLOCK;
          if (left === 0) closeSync(fd);
        }
      }
      held = held.subarray(at);
    }
  } finally {
    if (left > 0) closeSync(fd);
  }
  if (!ended || left > 0) throw new EmbeddedDatabaseError('the data-directory template is truncated');
  renameSync(join(dir, `${MARKER}.new`), join(dir, MARKER));
}

/** The header in `block`, or `undefined` for the zero block that ends the archive. */
function parseHeader(block: Buffer, dir: string): Header | undefined {
  if (block.every((byte) => byte === 0)) return undefined;
  const text = (from: number, length: number) => block.toString('latin1', from, from + length).replace(/\0.*$/s, '');
  const octal = (from: number, length: number) => Number.parseInt(text(from, length).trim() || '0', 8);
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : (block[i] as number);
  const prefix = text(345, 155);
  const path = (prefix === '' ? '' : `${prefix}/`) + text(0, 100);
  const type = block[156] === 0x35 ? 'folder' : block[156] === 0x30 || block[156] === 0 ? 'file' : undefined;
  // Only what scripts/build.mjs writes: a path inside `dir`, a file or a folder, an intact header.
  const inside = resolve(dir, path).startsWith(resolve(dir) + sep);
  if (sum !== octal(148, 8) || type === undefined || text(257, 5) !== 'ustar' || !inside) {
    throw new EmbeddedDatabaseError(`the data-directory template is damaged (at ${JSON.stringify(path)})`);
  }
  return { path: path.replace(/\/$/, ''), type, mode: octal(100, 8), size: octal(124, 12) };
}
