/**
 * The service's SQL files (`sql/`: queries, migrations, seed data), read from
 * the folder beside the program, or, in the single executable (`dist/orders`,
 * Node's single executable applications), from the assets it carries, keyed
 * by their path under `sql/` (scripts/build.mjs puts them there).
 *
 * `sql/` is one folder above this file (`src/db/../../sql`) in the sources,
 * and one folder above the built program (`dist/orders.mjs`): the build
 * defines `SQL_FROM_BUNDLE` so that the same code finds it from both.
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

/**
 * The asset key of `dir` (a folder under `sql/`), or `undefined` when it is not one or the program is not the single
 * executable.
 */
function assetFolder(dir: string): string | undefined {
  if (!inExecutable) return undefined;
  const path = relative(SQL_DIR, dir);
  if (path.startsWith('..')) return undefined;
  return `sql/${path.split(sep).join('/')}`;
}

/** The names of the `.sql` files in folder `dir`, sorted. */
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
