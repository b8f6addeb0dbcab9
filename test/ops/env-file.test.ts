/**
 * The `.env` file (contract §1): its syntax, line by line; its place under the
 * environment; and the server process reading it from its working directory.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { EnvFileError, loadEnvFile, parseEnvFile } from '../../src/config/env-file.ts';

describe('parseEnvFile()', () => {
  describe('accepts', () => {
    const cases: [string, string, [string, string][]][] = [
      ['blank lines and whole-line comments', '\n# a comment\n   # an indented one\nA=1\n\n', [['A', '1']]],
      [
        'an export prefix',
        'export A=1\nexport\tB=2',
        [
          ['A', '1'],
          ['B', '2'],
        ],
      ],
      ['a variable called export', 'export=1', [['export', '1']]],
      [
        'names of letters, digits and _',
        '_A1=1\nb_2=2',
        [
          ['_A1', '1'],
          ['b_2', '2'],
        ],
      ],
      ['blanks around the name and =', '  A = 1  ', [['A', '1']]],
      ['an unquoted value, trimmed, inner blanks kept', 'A=  hello   world  ', [['A', 'hello   world']]],
      ['an = in the value', 'A=postgres://u@h/db?x=1', [['A', 'postgres://u@h/db?x=1']]],
      ['a comment after an unquoted value', 'A=x # a note', [['A', 'x']]],
      [
        'a # inside an unquoted value',
        'A=x#1\nB=#2',
        [
          ['A', 'x#1'],
          ['B', '#2'],
        ],
      ],
      ['a comment and no value', 'A= # nothing', [['A', '']]],
      [
        'empty values',
        'A=\nB=""\nC=\'\'',
        [
          ['A', ''],
          ['B', ''],
          ['C', ''],
        ],
      ],
      ['a single-quoted value, literally', 'A=\'a \\n b # c "d"\'', [['A', 'a \\n b # c "d"']]],
      ['a double-quoted value with \\n, \\" and \\\\', 'A="1\\n2 \\"q\\" \\\\ it\'s"', [['A', '1\n2 "q" \\ it\'s']]],
      ['other backslashes in double quotes, as written', 'A="C:\\Users\\t"', [['A', 'C:\\Users\\t']]],
      ['blanks inside quotes', 'A="  padded  "', [['A', '  padded  ']]],
      [
        'a comment after a closing quote',
        'A="x" # a note\nB=\'y\'# another',
        [
          ['A', 'x'],
          ['B', 'y'],
        ],
      ],
      [
        'CRLF line endings',
        'A=1\r\nB="2"\r\n',
        [
          ['A', '1'],
          ['B', '2'],
        ],
      ],
      ['a byte-order mark', '\uFEFFA=1', [['A', '1']]],
      ['an empty file', '', []],
    ];
    for (const [what, text, entries] of cases) {
      it(what, () => {
        assert.deepEqual([...parseEnvFile(text, '.env')], entries);
      });
    }
  });

  describe('refuses, naming the file and the line', () => {
    const cases: [string, string, string][] = [
      ['a line without =', 'A=1\n\nPORT 3000', '.env line 3: expected NAME=value, got a line without "=" after PORT'],
      [
        'a line without = that holds a secret: only its first word is shown',
        'DATABASE_URL postgres://u:secret@db/orders',
        '.env line 1: expected NAME=value, got a line without "=" after DATABASE_URL',
      ],
      [
        'a secret with an "=" after a blank: nothing of it is shown',
        'DATABASE_URL postgres://app:S3cret@db.internal/orders?sslmode=require',
        '.env line 1: expected NAME=value, got a blank instead of "=" after DATABASE_URL',
      ],
      [
        'a line that starts with no name, without =: nothing of it is shown',
        'postgres://app:S3cret@db.internal/orders',
        '.env line 1: expected NAME=value, got a line without "="',
      ],
      [
        'a long text before = that is no name: not shown',
        `${'S3cret:'.repeat(8)}=x`,
        '.env line 1: the text before "=" is not a variable name (letters, digits and _, not starting with a digit)',
      ],
      [
        'a name starting with a digit',
        '1PORT=3',
        '.env line 1: "1PORT" is not a variable name (letters, digits and _, not starting with a digit)',
      ],
      [
        'a name with a dash',
        'MY-VAR=3',
        '.env line 1: "MY-VAR" is not a variable name (letters, digits and _, not starting with a digit)',
      ],
      ['a name with a blank', 'MY VAR=3', '.env line 1: expected NAME=value, got a blank instead of "=" after MY'],
      ['no name', '=3', '.env line 1: "" is not a variable name (letters, digits and _, not starting with a digit)'],
      [
        'an unterminated double quote',
        'A="open',
        ".env line 1: the double quote of A's value is not closed on its line",
      ],
      [
        'an unterminated single quote',
        "A='open",
        ".env line 1: the single quote of A's value is not closed on its line",
      ],
      [
        'a value over two lines',
        'A="one\ntwo"',
        ".env line 1: the double quote of A's value is not closed on its line",
      ],
      ['an escaped closing quote', 'A="x\\"', ".env line 1: the double quote of A's value is not closed on its line"],
      [
        'text after a closing double quote',
        'A="x" y',
        ".env line 1: unexpected text after the closing double quote of A's value",
      ],
      [
        'text after a closing single quote',
        "A='x'y",
        ".env line 1: unexpected text after the closing single quote of A's value",
      ],
      ['a name defined twice', 'A=1\nB=2\nexport A=3', '.env line 3: A is defined twice (first on line 1)'],
      [
        'a mistake after CRLF lines',
        'A=1\r\nB\r\n',
        '.env line 2: expected NAME=value, got a line without "=" after B',
      ],
    ];
    for (const [what, text, message] of cases) {
      it(what, () => {
        assert.throws(
          () => parseEnvFile(text, '.env'),
          (error: unknown) => error instanceof EnvFileError && error.message === message,
        );
      });
    }

    it('with the file name it was given', () => {
      assert.throws(() => parseEnvFile('x', 'deploy/.env'), {
        name: 'EnvFileError',
        message: 'deploy/.env line 1: expected NAME=value, got a line without "=" after x',
      });
    });
  });
});

describe('loadEnvFile()', () => {
  let folder: string;
  before(() => {
    folder = mkdtempSync(join(tmpdir(), 'orders-env-file-'));
  });
  after(() => rmSync(folder, { recursive: true, force: true }));

  it('without a .env returns a copy of the environment', () => {
    const env = { PORT: '3000' };
    const loaded = loadEnvFile(env, folder);
    assert.deepEqual(loaded, { PORT: '3000' });
    assert.notEqual(loaded, env);
  });

  it("adds the file's variables under the environment, which wins even when set to the empty string", () => {
    writeFileSync(join(folder, '.env'), 'PORT=4000\nHOST=0.0.0.0\nLOG_LEVEL=warn\n');
    const env = { PORT: '3000', LOG_LEVEL: '' };
    assert.deepEqual(loadEnvFile(env, folder), { PORT: '3000', LOG_LEVEL: '', HOST: '0.0.0.0' });
    assert.deepEqual(env, { PORT: '3000', LOG_LEVEL: '' });
  });

  it('treats a variable whose value is undefined as unset', () => {
    writeFileSync(join(folder, '.env'), 'HOST=0.0.0.0\n');
    assert.deepEqual(loadEnvFile({ HOST: undefined }, folder), { HOST: '0.0.0.0' });
  });

  it('throws the one-line error of a malformed file', () => {
    writeFileSync(join(folder, '.env'), 'PORT=1\nPORT=2\n');
    assert.throws(() => loadEnvFile({}, folder), {
      name: 'EnvFileError',
      message: '.env line 2: PORT is defined twice (first on line 1)',
    });
  });

  it('throws one line naming the file when it cannot be read', () => {
    const other = join(folder, 'a-folder');
    mkdirSync(join(other, '.env'), { recursive: true });
    assert.throws(
      () => loadEnvFile({}, other),
      (error: unknown) =>
        error instanceof EnvFileError && /^\.env: cannot be read \(EISDIR: [^\n]*\)$/.test(error.message),
    );
  });
});

describe('the server process with a .env in its working directory', { timeout: 60_000 }, () => {
  const MAIN = new URL('../../src/main.ts', import.meta.url).pathname;
  // The child runs in another folder, where the bare name "tsx" does not resolve.
  const TSX = import.meta.resolve('tsx');
  // Every variable of src/config/config.ts, so that only the test's and the file's apply.
  const CONFIGURATION = [
    'PORT',
    'HOST',
    'DATABASE_URL',
    'DATA_DIR',
    'DB_POOL_MAX',
    'MAX_BODY_BYTES',
    'RATE_LIMIT',
    'CACHE_MAX_AGE',
    'V1_DEPRECATED_AT',
    'V1_SUNSET_AT',
    'LOG_LEVEL',
    'WORKERS',
    'WEBHOOK_ALLOW_PRIVATE',
    'CORS_ORIGINS',
    'TRUST_PROXY',
    'METRICS_TOKEN',
    'DB_PREPARE',
    'REDIS_URL',
    'DATABASE_READ_URL',
    'REPLICA_MAX_LAG',
  ];
  let folder: string;
  const children: ChildProcess[] = [];

  before(() => {
    folder = mkdtempSync(join(tmpdir(), 'orders-env-main-'));
  });
  after(() => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    rmSync(folder, { recursive: true, force: true });
  });

  function start(env: Record<string, string>) {
    const full: NodeJS.ProcessEnv = { ...process.env };
    for (const name of CONFIGURATION) delete full[name];
    const child = spawn(process.execPath, ['--import', TSX, MAIN], { cwd: folder, env: { ...full, ...env } });
    children.push(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const listening = new Promise<{ url: string; database: string }>((resolve, reject) => {
      child.stderr.on('data', () => {
        const match = /orders: listening on (http:\/\/\S+) \(database: (.*)\)\n/.exec(stderr);
        if (match) resolve({ url: match[1] as string, database: match[2] as string });
      });
      child.once('exit', (code) => reject(new Error(`exited with ${code}: ${stderr}`)));
    });
    listening.catch(() => {});
    return { child, listening, stdout: () => stdout, stderr: () => stderr };
  }

  async function stop(child: ReturnType<typeof start>['child']): Promise<number | null> {
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    return (await exited)[0] as number | null;
  }

  it("uses the file's variables", async () => {
    writeFileSync(join(folder, '.env'), '# the service, for this test\nPORT=0\nLOG_LEVEL=warn\nDATABASE_URL=memory:\n');
    const service = start({});
    const { url, database } = await service.listening;
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.notEqual(new URL(url).port, '3000');
    assert.equal(database, 'embedded (in memory)');
    assert.equal((await fetch(`${url}/healthz`)).status, 200);
    assert.equal(await stop(service.child), 0);
    // LOG_LEVEL=warn: no info lines, not the request's nor the shutdown's.
    assert.equal(service.stdout(), '');
  });

  it('lets the environment win', async () => {
    const service = start({ LOG_LEVEL: 'info' });
    await service.listening;
    // LOG_LEVEL=info: the info lines, written to stdout in batches.
    await new Promise<void>((resolve) => {
      const check = () => /"level":"info","message":"listening"/.test(service.stdout()) && resolve();
      service.child.stdout.on('data', check);
      check();
    });
    assert.equal(await stop(service.child), 0);
  });

  it('stops start-up with exit status 2 and one line naming the file and the line when malformed', async () => {
    writeFileSync(join(folder, '.env'), '# the service\nLOG_LEVEL=warn\nPORT 3000\n');
    const service = start({});
    const [code] = await once(service.child, 'exit');
    assert.equal(code, 2);
    assert.equal(service.stderr(), 'orders: .env line 3: expected NAME=value, got a line without "=" after PORT\n');
    assert.equal(service.stdout(), '');
  });
});
