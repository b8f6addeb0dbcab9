#!/usr/bin/env node
// The package's `bin`: runs the TypeScript command-line tool through tsx,
// with the working directory's .env under the environment (SPEC §1).
import { register } from 'tsx/esm/api';

register();
const { runCliProcess } = await import('../src/cli.ts');
process.exitCode = await runCliProcess(process.argv.slice(2));
