/**
 * The entry of the built programs (`make build` → `dist/orders.mjs` and the
 * single executable `dist/orders`): with no
 * argument it starts the server exactly as `make run` does (src/main.ts);
 * with one it runs the command-line tool (src/cli.ts), as `npm run orders`.
 * Both read the working directory's `.env` under the environment (contract §1).
 */
import cluster from 'node:cluster';

const argv = process.argv.slice(2);
// A worker of WORKERS>1 is always the server: in the single executable,
// cluster.fork() hands the runtime's flags (its execArgv) over as arguments.
if (argv.length === 0 || cluster.isWorker) {
  await import('./main.ts');
} else {
  const { runCliProcess } = await import('./cli.ts');
  process.exitCode = await runCliProcess(argv);
}
