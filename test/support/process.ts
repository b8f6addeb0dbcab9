/** The service as `make run` starts it, in a child process, for the tests that signal or kill it. */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';

const ROOT = new URL('../..', import.meta.url).pathname;

export interface ServiceProcess {
  readonly process: ChildProcessWithoutNullStreams;
  /** The URL of its "listening on …" line. */
  readonly url: string;
  stdout(): string;
  stderr(): string;
}

/**
 * Spawns `src/main.ts` (or another entry through tsx; or, given `command`,
 * that program and its arguments) with `env` over this process's environment
 * (`DATABASE_URL` only when `env` names it). Under `make test` (`TEST_BUNDLES` set) the entry runs as compiled
 * beside the test files (scripts/bundle-tests.mjs), without tsx.
 */
export function spawnService(
  env: Record<string, string>,
  entry = 'src/main.ts',
  command?: readonly string[],
  cwd = ROOT,
): { process: ChildProcessWithoutNullStreams; stdout(): string; stderr(): string } {
  const full: NodeJS.ProcessEnv = { ...process.env, PORT: '0', ...env };
  if (env.DATABASE_URL === undefined) delete full.DATABASE_URL;
  // The run's replica names the run's own database: a child on another database gets none unless told.
  if (env.DATABASE_READ_URL === undefined) delete full.DATABASE_READ_URL;
  // From another working directory (its own .env), tsx and the entry by where they are.
  const [program, ...args] = command ?? entryCommand(entry);
  const child = spawn(program as string, args, { cwd, env: full });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return { process: child, stdout: () => stdout, stderr: () => stderr };
}

function entryCommand(entry: string): string[] {
  if (process.env.TEST_BUNDLES === undefined)
    return [process.execPath, '--import', import.meta.resolve('tsx'), join(ROOT, entry)];
  return [process.execPath, join(ROOT, 'dist/tests', entry.replace(/\.ts$/, '.mjs'))];
}

/** Spawns the service and resolves once it prints where it listens (matching `ready`, whose group 1 is the URL). */
export async function startService(
  env: Record<string, string>,
  ready = /listening on (http:\/\/\S+)/,
  entry?: string,
  command?: readonly string[],
  cwd?: string,
): Promise<ServiceProcess> {
  const service = spawnService(env, entry, command, cwd);
  const url = await new Promise<string>((resolve, reject) => {
    const check = () => {
      const match = ready.exec(service.stderr());
      if (match) resolve(match[1] as string);
    };
    service.process.stderr.on('data', check);
    service.process.once('exit', (code) =>
      reject(new Error(`exited with ${code} before listening: ${service.stderr()}`)),
    );
  });
  return { ...service, url };
}

/**
 * Resolves with what `find` returns for the service's `stream` output, as soon as it returns
 * something (at once when the output so far suffices); rejects when the service exits first.
 */
export function waitForOutput<T>(
  service: { readonly process: ChildProcessWithoutNullStreams; stdout(): string; stderr(): string },
  stream: 'stdout' | 'stderr',
  find: (text: string) => T | undefined,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const check = () => {
      const found = find(stream === 'stdout' ? service.stdout() : service.stderr());
      if (found === undefined) return false;
      service.process[stream].off('data', onData);
      service.process.off('exit', onExit);
      resolve(found);
      return true;
    };
    // Listeners run in order: spawnService's own has appended the chunk already.
    const onData = () => {
      check();
    };
    const onExit = (code: number | null) => {
      service.process[stream].off('data', onData);
      reject(new Error(`exited with ${code} while waiting: ${service.stderr()}`));
    };
    if (check()) return;
    service.process[stream].on('data', onData);
    service.process.once('exit', onExit);
  });
}
