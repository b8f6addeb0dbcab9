// The test reporter of `make test` (a node:test reporter: an async generator
// over the runner's events, yielding text for stdout).
//
// - On a terminal, outside CI: node-test-reporter, a spinner and one line per
//   test, for people.
// - Piped (to a file, `tee`, `less`) or under CI (`CI` set and not empty):
//   the spec reporter's plain lines, without colour codes. Its closing
//   summary (`ℹ tests N`, `ℹ pass N`, `ℹ fail N`, …) is kept exactly as it
//   is: .ci/run reads those lines.
//
// Either way the run ends with the skipped tests, one line each with the
// reason given to `skip` (the spec reporter prints it only beside the test,
// somewhere in thousands of lines). Plain JavaScript, not TypeScript: the
// runner loads reporters itself, before any test file.
import { relative } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { spec } from 'node:test/reporters';

/**
 * `spinner` on a terminal outside CI, `plain` otherwise.
 *
 * @example
 * chooseReporter({ isTTY: true, ci: undefined }); // 'spinner'
 * chooseReporter({ isTTY: true, ci: 'true' });    // 'plain'
 * chooseReporter({ isTTY: false, ci: '' });       // 'plain'
 *
 * @param {{ isTTY: boolean | undefined, ci: string | undefined }} where
 * @returns {'spinner' | 'plain'}
 */
export function chooseReporter({ isTTY, ci }) {
  return isTTY === true && (ci === undefined || ci === '') ? 'spinner' : 'plain';
}

// ECMA-48 control sequences (colours, cursor movement): the spec reporter
// colours its lines when stderr is a terminal, even when stdout is a file.
// biome-ignore lint/suspicious/noControlCharactersInRegex: ESC (\x1b) starts every sequence it matches
const CONTROL_SEQUENCE = /\x1b\[[0-?]*[ -/]*[@-~]/g;

/** The reporter: the one `chooseReporter()` picks for this process's stdout, then the skipped tests. */
export default async function* reporter(source) {
  const skipped = [];
  const events = collectSkips(source, skipped);
  if (chooseReporter({ isTTY: process.stdout.isTTY, ci: process.env.CI }) === 'spinner') {
    const { default: spinner } = await import('node-test-reporter');
    yield* spinner(events);
  } else {
    const plain = spec();
    const fed = pipeline(Readable.from(events), plain);
    fed.catch(() => {}); // a failure destroys `plain` too, and ends the loop with it
    for await (const chunk of plain) yield String(chunk).replace(CONTROL_SEQUENCE, '');
    await fed;
  }
  yield skipList(skipped);
}

/**
 * Passes every event on, noting each skipped test or suite with where it is:
 * its file and the suites around it. A file's events arrive together and in
 * order (each file runs in its own process), so one stack per file names them.
 */
async function* collectSkips(source, skipped) {
  const stacks = new Map();
  for await (const event of source) {
    const { data } = event;
    if (event.type === 'test:start' && data.file !== undefined) {
      const stack = stacks.get(data.file) ?? [];
      stack.length = data.nesting;
      stack.push(data.name);
      stacks.set(data.file, stack);
    } else if (event.type === 'test:pass' && data.skip !== undefined && data.skip !== false) {
      const around = (stacks.get(data.file) ?? []).slice(0, data.nesting);
      skipped.push({
        file: data.file === undefined ? '' : sourceOf(relative(process.cwd(), data.file)),
        name: [...around, data.name].join(' › '),
        suite: data.details?.type === 'suite',
        reason: typeof data.skip === 'string' && data.skip !== '' ? data.skip : 'no reason given',
      });
    }
    yield event;
  }
}

/**
 * The source of a test file that `make test` runs compiled (scripts/bundle-tests.mjs): the name a reader looks for.
 *
 * @example
 * sourceOf('dist/tests/test/api/orders.test.mjs'); // 'test/api/orders.test.ts'
 * sourceOf('test/api/orders.test.ts');             // 'test/api/orders.test.ts'
 *
 * @param {string} file
 * @returns {string}
 */
export function sourceOf(file) {
  const compiled = /^dist\/tests\/(.+)\.mjs$/.exec(file);
  return compiled === null ? file : `${compiled[1]}.ts`;
}

/**
 * The closing list: one line per skipped test or suite (whose tests then do
 * not run, nor count) with its reason; nothing when none was skipped.
 *
 * @example
 * skipList([{ file: 'test/a.test.ts', name: 'x › y', suite: false, reason: 'needs a real PostgreSQL server' }]);
 * // '\nSkipped, and why: 1 test (the summary\'s "skipped") and 0 suites, whose tests neither run nor count\n'
 * //   + '﹣ test/a.test.ts: x › y # needs a real PostgreSQL server\n'
 */
export function skipList(skipped) {
  if (skipped.length === 0) return '';
  const lines = skipped.map(
    ({ file, name, suite, reason }) =>
      `﹣ ${file}${file === '' ? '' : ': '}${name}${suite ? ' (suite)' : ''} # ${reason}`,
  );
  const suites = skipped.filter(({ suite }) => suite).length;
  const tests = skipped.length - suites;
  // Node's summary counts skipped tests only: a skipped suite's tests are neither run nor counted.
  const count =
    `${tests} ${tests === 1 ? 'test' : 'tests'} (the summary's "skipped") and ${suites} ` +
    `${suites === 1 ? 'suite' : 'suites'}, whose tests neither run nor count`;
  return `\nSkipped, and why: ${count}\n${lines.join('\n')}\n`;
}
