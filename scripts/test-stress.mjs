// `make test-stress`: the whole suite (`make test`) on a machine kept busy, as a newcomer's often is: one process
// spinning on each core, and the server of `make run` (on an embedded database of its own) up beside the suite.
// Its exit status is `make test`'s; the failures are in its output as `make test` prints them. What it proves:
// no test depends on how fast this machine is.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';

const spinners = Array.from({ length: availableParallelism() }, () =>
  spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }),
);
const data = mkdtempSync(join(tmpdir(), 'orders-stress-'));
const server = spawn(
  process.execPath,
  ['--max-semi-space-size=10', '--heap-growing-percent=50', '--no-maglev', '--import', 'tsx', 'src/main.ts'],
  { env: { ...process.env, PORT: '0', DATA_DIR: join(data, 'data'), LOG_LEVEL: 'warn' }, stdio: 'ignore' },
);
const started = performance.now();
const suite = spawn('make', ['test'], { stdio: 'inherit' });
const [code] = await once(suite, 'exit');
for (const child of [...spinners, server]) child.kill('SIGKILL');
rmSync(data, { recursive: true, force: true });
const minutes = ((performance.now() - started) / 60_000).toFixed(1);
console.log(`test-stress: make test exited ${code} after ${minutes} min with ${spinners.length} cores kept busy`);
process.exit(code ?? 1);
