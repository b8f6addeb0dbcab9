/** The project's TypeScript run on a generated client's folder (test/generated-client, test/generated-zod). */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const TSC = join(fileURLToPath(new URL('../..', import.meta.url)), 'node_modules', '.bin', 'tsc');

/** tsc's messages on the folder's project, one line each (their elaborations left out); none when it is clean. */
export async function typeCheck(folder: string): Promise<string[]> {
  const output = await run(TSC, ['-p', folder], { cwd: folder, maxBuffer: 64 << 20 }).then(
    ({ stdout }) => stdout,
    (error: { code?: unknown; stdout?: string }) => {
      // 1 and 2: tsc ran and reported errors; anything else is tsc failing to run.
      if ((error.code === 1 || error.code === 2) && error.stdout !== undefined) return error.stdout;
      throw error;
    },
  );
  return output.split('\n').filter((line) => /^\S.* error TS\d+: /.test(line));
}
