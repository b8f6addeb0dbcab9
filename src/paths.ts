/**
 * Where the service's SQL files are: `sql/` in the project's root folder.
 * This file is one folder below the root (`src/`), as the built program is
 * (`dist/orders.mjs`), so the same relative URL finds it from both.
 */
import { fileURLToPath } from 'node:url';

export const SQL_DIR = fileURLToPath(new URL('../sql/', import.meta.url));
