/**
 * The service's SQL files (`sql/`), read from beside the program or, in the single executable, from its assets,
 * keyed by their path under `sql/` (scripts/build.mjs). The build defines `SQL_FROM_BUNDLE`: the built program
 * (`dist/orders.mjs`) is one folder below `sql/`'s parent, this file two.
 */
import { readdirSync, readFileSync } from 'node:fs';
import sea from 'node:sea';
import { relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

declare const SQL_FROM_BUNDLE: boolean | undefined;

export const SQL_DIR = fileURLToPath(
  new URL(typeof SQL_FROM_BUNDLE === 'boolean' && SQL_FROM_BUNDLE ? '../sql/' : '../../sql/', import.meta.url),
);

const inExecutable = sea.isSea();
// Node 26's API (the executable is built with it); @types/node 20 lacks it.
const assetKeys = (): string[] => (sea as typeof sea & { getAssetKeys(): string[] }).getAssetKeys();

/** The asset key of `dir`, in the single executable. */
function assetFolder(dir: string): string | undefined {
  if (!inExecutable) return undefined;
  const path = relative(SQL_DIR, dir);
  if (path.startsWith('..')) return undefined;
  return `sql/${path.split(sep).join('/')}`;
}

/** The `.sql` files in `dir`, sorted. */
export function sqlFileNames(dir: string): string[] {
  const folder = assetFolder(dir);
  const names =
    folder === undefined
      ? readdirSync(dir)
      : assetKeys()
          .filter((key) => key.startsWith(`${folder}/`) && !key.slice(folder.length + 1).includes('/'))
          .map((key) => key.slice(folder.length + 1));
  return names.filter((name) => name.endsWith('.sql')).sort();
}

/** The text of file `name` in folder `dir`. */
export function readSqlFile(dir: string, name: string): string {
  const folder = assetFolder(dir);
  return folder === undefined
    ? readFileSync(`${dir}${dir.endsWith(sep) ? '' : sep}${name}`, 'utf8')
    : sea.getAsset(`${folder}/${name}`, 'utf8');
}
