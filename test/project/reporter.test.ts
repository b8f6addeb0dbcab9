/**
 * The reporter of `make test` (test/support/reporter.mjs): piped or under
 * CI, plain lines without control codes, the spec reporter's closing
 * summary exactly as .ci/run reads it, then the skipped tests with their
 * reasons; the spinner only on a terminal outside CI. Each case runs the
 * runner as `make test` does, on a fixture file (not `make test` itself,
 * which would run this file again).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ARGS = [
  '--import',
  'tsx',
  '--test',
  '--test-reporter=./test/support/reporter.mjs',
  '--test-reporter-destination=stdout',
  'test/fixtures/reporter-sample.ts',
];
const ESC = '\x1b';
/** The lines .ci/run keeps from a run's output (its `summary()`). */
const CI_SUMMARY = /^ℹ (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) /;
const SKIPS = [
  '',
  'Skipped, and why: 1 test (the summary\'s "skipped") and 1 suite, whose tests neither run nor count',
  '﹣ test/fixtures/reporter-sample.ts: the sample › is skipped # needs a real PostgreSQL server',
  '﹣ test/fixtures/reporter-sample.ts: a skipped suite (suite) # embedded database only',
];

/**
 * This process's environment for a run of its own: without what marks this
 * process as a test file of a run (its reports would go to that run) or as
 * measured by c8, nor the colour and CI switches; then `env`.
 */
function environment(env: Record<string, string>): NodeJS.ProcessEnv {
  const {
    NODE_TEST_CONTEXT: _context,
    NODE_V8_COVERAGE: _coverage,
    CI: _ci,
    FORCE_COLOR: _force,
    NO_COLOR: _no,
    ...rest
  } = process.env;
  return { ...rest, ...env };
}

/** The runner on the fixture, stdout piped; its exit code and output. */
function run(env: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ARGS, {
      cwd: ROOT,
      env: environment(env),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

/**
 * The runner on the fixture in a terminal (util-linux `script`), its output
 * with CRLF as LF; `piped`: its stdout into `cat`, its stderr still on the
 * terminal, as `make test > file` in a shell.
 */
function runOnTerminal(env: Record<string, string> = {}, piped = false): string {
  const command = [process.execPath, ...ARGS].map((arg) => `'${arg}'`).join(' ') + (piped ? ' | cat' : '');
  const result = spawnSync('script', ['-qec', command, '/dev/null'], {
    cwd: ROOT,
    env: environment(env),
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(result.status, 0, result.stderr);
  return result.stdout.replaceAll('\r\n', '\n');
}

/** The lines after the spec reporter's last summary line. */
function afterSummary(output: string): string[] {
  const lines = output.trimEnd().split('\n');
  const last = lines.findLastIndex((line) => CI_SUMMARY.test(line));
  return lines.slice(last + 1);
}

const HAS_SCRIPT = spawnSync('script', ['--version']).error === undefined;

describe('the reporter of make test', () => {
  describe('piped, outside CI', () => {
    it('prints plain lines: no control code at all', async () => {
      const { code, output } = await run();
      assert.equal(code, 0);
      assert.equal(output.includes(ESC), false);
      assert.match(output, /^ {2}✔ passes \([0-9.]+ms\)$/m);
      assert.match(output, /^ {2}﹣ is skipped \([0-9.]+ms\) # needs a real PostgreSQL server$/m);
    });

    it('keeps the closing summary lines CI reads, exactly', async () => {
      const { output } = await run();
      const summary = output.split('\n').filter((line) => CI_SUMMARY.test(line));
      assert.deepEqual(summary.slice(0, 7), [
        'ℹ tests 2',
        'ℹ suites 2',
        'ℹ pass 1',
        'ℹ fail 0',
        'ℹ cancelled 0',
        'ℹ skipped 1',
        'ℹ todo 0',
      ]);
      assert.match(summary[7] ?? '', /^ℹ duration_ms [0-9.]+$/);
      assert.equal(summary.length, 8);
    });

    it('ends with each skipped test and suite and its reason, after the summary', async () => {
      assert.deepEqual(afterSummary((await run()).output), SKIPS);
    });
  });

  it('under CI: the same plain lines, summary and skips', async () => {
    const { code, output } = await run({ CI: 'true' });
    assert.equal(code, 0);
    assert.equal(output.includes(ESC), false);
    assert.ok(
      output.includes(
        '\nℹ tests 2\nℹ suites 2\nℹ pass 1\nℹ fail 0\nℹ cancelled 0\nℹ skipped 1\nℹ todo 0\nℹ duration_ms ',
      ),
    );
    assert.deepEqual(afterSummary(output), SKIPS);
  });

  describe('on a terminal', {
    skip: HAS_SCRIPT ? false : 'needs util-linux script(1) to give the run a terminal',
  }, () => {
    it('outside CI: the spinner, with its control codes, then the skips', () => {
      const output = runOnTerminal();
      assert.ok(output.includes(`${ESC}[K`), 'the spinner clears its line');
      assert.match(output, /Ran 2 tests in 2 suites/);
      assert.deepEqual(output.trimEnd().split('\n').slice(-3), SKIPS.slice(1));
    });

    it('piped from it, stderr still on it: plain lines, the colours the spec reporter would add stripped', () => {
      const output = runOnTerminal({}, true);
      assert.equal(output.includes(ESC), false);
      assert.match(output, /^ {2}✔ passes \([0-9.]+ms\)$/m);
      assert.deepEqual(afterSummary(output), SKIPS);
    });

    it('under CI: plain lines all the same', () => {
      const output = runOnTerminal({ CI: 'true' });
      assert.equal(output.includes(ESC), false);
      assert.deepEqual(afterSummary(output), SKIPS);
    });
  });

  it('chooses the spinner only for a terminal outside CI', async () => {
    const { chooseReporter } = (await import(String(new URL('../support/reporter.mjs', import.meta.url)))) as {
      chooseReporter(where: { isTTY: boolean | undefined; ci: string | undefined }): string;
    };
    const cases = [
      [{ isTTY: true, ci: undefined }, 'spinner'],
      [{ isTTY: true, ci: '' }, 'spinner'],
      [{ isTTY: true, ci: 'true' }, 'plain'],
      [{ isTTY: true, ci: '1' }, 'plain'],
      [{ isTTY: false, ci: undefined }, 'plain'],
      [{ isTTY: undefined, ci: undefined }, 'plain'],
    ] as const;
    assert.deepEqual(
      cases.map(([where]) => chooseReporter(where)),
      cases.map(([, chosen]) => chosen),
    );
  });

  it('names a compiled test file by its source in the list of skips', async () => {
    const { sourceOf } = (await import(String(new URL('../support/reporter.mjs', import.meta.url)))) as {
      sourceOf(file: string): string;
    };
    assert.equal(sourceOf('dist/tests/test/api/orders.test.mjs'), 'test/api/orders.test.ts');
    assert.equal(sourceOf('test/api/orders.test.ts'), 'test/api/orders.test.ts');
    assert.equal(sourceOf('dist/tests/test/api/orders.test.mjs.map'), 'dist/tests/test/api/orders.test.mjs.map');
    assert.equal(sourceOf(''), '');
  });
});
