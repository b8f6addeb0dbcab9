/**
 * The entry of the built program (`make build` → `dist/orders.mjs`): with no
 * argument it starts the server exactly as `make run` does (src/main.ts);
 * with one it runs the command-line tool (src/cli.ts), as `npm run orders`.
 */
const argv = process.argv.slice(2);
if (argv.length === 0) {
  await import('./main.ts');
} else {
  const { runCli } = await import('./cli.ts');
  process.exitCode = await runCli(argv);
}
