/**
 * The request log's writer (src/base/logger.ts): lines of one event-loop turn go to
 * stdout in one write, and none is lost when the process ends, however it
 * ends short of SIGKILL. Run in child processes, whose stdout is a pipe.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, it, mock } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createLogger } from '../../src/base/logger.ts';

const LOG_MODULE = fileURLToPath(new URL('../../src/base/logger.ts', import.meta.url));

/** Runs `body` in a child process with the logger at hand; resolves with its exit code, stdout and stderr. */
function child(body: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const script = `import { createLogger } from ${JSON.stringify(LOG_MODULE)};
const writes = [];
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = (chunk, ...rest) => {
  writes.push(String(chunk).split('\\n').length - 1);
  return write(chunk, ...rest);
};
const log = createLogger('info');
${body}`;
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : ((error.code as number | null) ?? null), stdout, stderr });
    });
  });
}

const lines = (stdout: string) =>
  stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { message: string; n?: number });

describe('createLogger()', () => {
  it('writes a line as JSON.stringify({ time, level, message, ...fields }) would; drops lines below its level', () => {
    const lines: string[] = [];
    const log = createLogger('info', (line) => lines.push(line));
    log.debug('hidden');
    log.info('plain');
    log.warn('with fields', {
      requestId: 'r-1',
      status: null,
      nested: { a: [1, 'two'] },
      gone: undefined,
      quote: 'say "hi"\n',
    });
    log.error('empty fields', {});
    log.info('only undefined', { gone: undefined });
    assert.equal(lines.length, 4);
    for (const line of lines) assert.ok(line.endsWith('\n') && !line.slice(0, -1).includes('\n'), line);
    const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    for (const [i, line] of lines.entries()) {
      const { time, level, message, ...fields } = parsed[i] as Record<string, unknown>;
      assert.match(time as string, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.equal(line, `${JSON.stringify({ time, level, message, ...fields })}\n`);
    }
    assert.deepEqual(
      parsed.map((p) => [p.level, p.message]),
      [
        ['info', 'plain'],
        ['warn', 'with fields'],
        ['error', 'empty fields'],
        ['info', 'only undefined'],
      ],
    );
    assert.deepEqual(parsed[1], {
      time: parsed[1]!.time,
      level: 'warn',
      message: 'with fields',
      requestId: 'r-1',
      status: null,
      nested: { a: [1, 'two'] },
      quote: 'say "hi"\n',
    });
  });

  it('stamps each line with the time of the clock when it is written, to the millisecond', () => {
    const times: string[] = [];
    const log = createLogger('info', (line) => times.push((JSON.parse(line) as { time: string }).time));
    mock.timers.enable({ apis: ['Date'], now: Date.UTC(2026, 11, 4, 22, 0, 0, 7) });
    try {
      log.info('first');
      log.info('same millisecond');
      mock.timers.tick(1);
      log.info('next millisecond');
      mock.timers.setTime(Date.UTC(2027, 0, 1, 0, 0, 0, 0));
      log.info('new year');
      mock.timers.setTime(Date.UTC(2026, 11, 4, 22, 0, 0, 7));
      log.info('clock set back');
    } finally {
      mock.timers.reset();
    }
    assert.deepEqual(times, [
      '2026-12-04T22:00:00.007Z',
      '2026-12-04T22:00:00.007Z',
      '2026-12-04T22:00:00.008Z',
      '2027-01-01T00:00:00.000Z',
      '2026-12-04T22:00:00.007Z',
    ]);
  });
});

describe('the stdout log writer', () => {
  it('writes the lines of one turn in one write, and those of the next turn in another', async () => {
    const { code, stdout, stderr } = await child(`
for (let n = 0; n < 50; n++) log.info('request', { n });
await new Promise((resolve) => setTimeout(resolve, 5));
log.info('later');
await new Promise((resolve) => setTimeout(resolve, 5));
process.stderr.write(JSON.stringify(writes));`);
    assert.equal(code, 0);
    assert.deepEqual(JSON.parse(stderr), [50, 1]);
    assert.deepEqual(
      lines(stdout).map((l) => l.n ?? l.message),
      [...Array.from({ length: 50 }, (_, n) => n), 'later'],
    );
  });

  it('flushes what is pending when the process exits, by process.exit() or by an uncaught exception', async () => {
    const exited = await child(`log.info('before exit'); process.exit(3);`);
    assert.equal(exited.code, 3);
    assert.deepEqual(
      lines(exited.stdout).map((l) => l.message),
      ['before exit'],
    );
    const crashed = await child(`log.error('before the crash'); throw new Error('boom');`);
    assert.equal(crashed.code, 1);
    assert.match(crashed.stderr, /Error: boom/);
    assert.deepEqual(
      lines(crashed.stdout).map((l) => l.message),
      ['before the crash'],
    );
  });

  it('writes at once when a turn has logged 64 KiB', async () => {
    const { code, stderr } = await child(`
const field = 'x'.repeat(1000);
for (let n = 0; n < 100; n++) log.info('big', { field });
await new Promise((resolve) => setTimeout(resolve, 5));
process.stderr.write(JSON.stringify(writes));`);
    assert.equal(code, 0);
    const writes = JSON.parse(stderr) as number[];
    assert.equal(
      writes.reduce((a, b) => a + b, 0),
      100,
    );
    assert.ok(writes.length === 2 && (writes[0] as number) < 100, `writes: ${writes.join(', ')}`);
  });
});
