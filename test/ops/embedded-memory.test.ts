/**
 * The embedded database starts small (contract §16): creating a new data
 * directory peaks at most 300 MB RSS, and after start-up on an existing one
 * the process holds at most 200 MB, 100 requests later. Measured, not timed:
 * the kernel's figures for the real program (VmHWM, the peak resident set,
 * and VmRSS in /proc/<pid>/status), read once it says it listens and after
 * its requests. The single executable is run as it is installed, copied into
 * a folder of its own (test/ops/executable.test.ts); `make run` from the sources,
 * where tsx adds its own ~70 MB (docs/operations.md), is held to the peak.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { brotliCompressSync, brotliDecompressSync, constants } from 'node:zlib';
import { readTemplate, writeTemplate } from '../../src/db/embedded-template.ts';
import { EmbeddedDatabaseError } from '../../src/db/errors.ts';
import { REAL_SERVER_URL } from '../support/database.ts';
import { startService, type ServiceProcess } from '../support/process.ts';

const EXECUTABLE = process.env.ORDERS_EXECUTABLE ?? new URL('../../dist/orders', import.meta.url).pathname;
const MB = 1024 * 1024;
const CREATION_PEAK = 300 * MB;
const HELD_AFTER_START = 200 * MB;
const REQUESTS = 100;

/** VmHWM and VmRSS of process `pid`, in bytes. */
function memory(pid: number): { peak: number; resident: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1]) * 1024;
  return { peak: kib('VmHWM'), resident: kib('VmRSS') };
}

const mb = (bytes: number) => `${(bytes / MB).toFixed(0)} MB`;

/** `GET /v2/products` `REQUESTS` times, one after another, each answered 200 with the demo catalog. */
async function requests(url: string): Promise<void> {
  for (let i = 0; i < REQUESTS; i++) {
    const response = await fetch(`${url}/v2/products`);
    assert.equal(response.status, 200);
    assert.ok(((await response.json()) as { data: unknown[] }).data.length > 0);
  }
}

/** Stops `service` with SIGTERM and waits for its exit 0 (the data directory closed cleanly, its lock gone). */
async function stop(service: ServiceProcess): Promise<void> {
  const exited = once(service.process, 'exit');
  service.process.kill('SIGTERM');
  assert.deepEqual(await exited, [0, null], service.stderr());
}

/** Starts the program (`command`) on `dataDir` and measures it once listening and after the requests. */
/** What `make run` runs (the Makefile's `run` rule, checked below). */
const MAKE_RUN = [
  process.execPath,
  '--max-semi-space-size=10',
  '--heap-growing-percent=50',
  '--no-maglev',
  '--import',
  'tsx',
  'src/main.ts',
];

async function measure(t: TestContext, label: string, dataDir: string, command?: readonly string[]) {
  const service = await startService({ DATA_DIR: dataDir, LOG_LEVEL: 'warn' }, undefined, undefined, command);
  try {
    const listening = memory(service.process.pid as number);
    await requests(service.url);
    const served = memory(service.process.pid as number);
    t.diagnostic(
      `${label}: peak ${mb(served.peak)}, ${mb(listening.resident)} once listening, ` +
        `${mb(served.resident)} after ${REQUESTS} requests`,
    );
    return { stderr: service.stderr(), peak: served.peak, resident: served.resident };
  } finally {
    await stop(service);
  }
}

describe("the embedded database's memory", {
  skip: REAL_SERVER_URL ? 'embedded database only: runs in the embedded pass' : false,
}, () => {
  let folder: string;
  before(() => {
    folder = mkdtempSync(join(tmpdir(), 'orders-memory-'));
  });
  after(() => rmSync(folder, { recursive: true, force: true }));

  describe('the single executable, as installed', {
    skip: existsSync(EXECUTABLE) ? false : `${EXECUTABLE} is missing: make build makes it (make test runs make build)`,
  }, () => {
    let program: string;
    let dataDir: string;
    before(() => {
      program = join(folder, 'orders');
      copyFileSync(EXECUTABLE, program);
      chmodSync(program, 0o755);
      dataDir = join(folder, 'data');
    });

    it('creates a new data directory with a peak of at most 300 MB', async (t) => {
      const first = await measure(t, 'dist/orders, first start', dataDir, [program]);
      assert.match(first.stderr, /A new embedded database was created/);
      assert.ok(first.peak <= CREATION_PEAK, `peak ${mb(first.peak)} > ${mb(CREATION_PEAK)}`);
      assert.ok(existsSync(join(dataDir, 'PG_VERSION')));
      assert.deepEqual(
        readdirSync(dataDir).filter((name) => name.endsWith('.new')),
        [],
      );
    });

    it('holds at most 200 MB after start-up on it and 100 requests', async (t) => {
      const later = await measure(t, 'dist/orders, later start', dataDir, [program]);
      assert.doesNotMatch(later.stderr, /A new embedded database was created/);
      assert.ok(later.resident <= HELD_AFTER_START, `${mb(later.resident)} > ${mb(HELD_AFTER_START)}`);
    });
  });

  describe('make run, from the sources', () => {
    it('is measured as the Makefile runs it', () => {
      const makefile = readFileSync(new URL('../../Makefile', import.meta.url), 'utf8');
      assert.match(makefile, new RegExp(`^run: .*\\n\\tnode ${MAKE_RUN.slice(1).join(' ')}( \\\\)?$`, 'm'));
    });

    it('creates a new data directory with a peak of at most 300 MB', async (t) => {
      const dataDir = join(folder, 'data-sources');
      const first = await measure(t, 'make run, first start', dataDir, MAKE_RUN);
      assert.match(first.stderr, /A new embedded database was created/);
      assert.ok(first.peak <= CREATION_PEAK, `peak ${mb(first.peak)} > ${mb(CREATION_PEAK)}`);
      const later = await measure(t, 'make run, later start', dataDir, MAKE_RUN);
      assert.doesNotMatch(later.stderr, /A new embedded database was created/);
    });
  });
});

describe('the data-directory template', () => {
  it('exists for the installed PGlite (node scripts/build.mjs --template writes it)', () => {
    assert.ok(
      readTemplate() !== undefined,
      'no template for the installed PGlite: run node scripts/build.mjs --template',
    );
  });

  const template = readTemplate() ?? new Uint8Array();
  /** The template's first `bytes` of tar, to be spoilt. */
  const tar = (bytes: number) => Buffer.from(brotliDecompressSync(template).subarray(0, bytes));
  const compress = (bytes: Buffer) => brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 1 } });

  it('refuses an archive cut short, and leaves the data directory unmarked', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'orders-template-'));
    try {
      await assert.rejects(
        writeTemplate(compress(tar(100 * 512 + 100)), dir),
        /the data-directory template is truncated/,
      );
      assert.equal(existsSync(join(dir, 'PG_VERSION')), false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a damaged header', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'orders-template-'));
    try {
      const damaged = tar(4096);
      damaged[0] = (damaged[0] as number) ^ 0x01; // the first name changes; its checksum no longer holds
      await assert.rejects(writeTemplate(compress(damaged), dir), EmbeddedDatabaseError);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a path outside the data directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'orders-template-'));
    try {
      const escaping = tar(4096);
      escaping.write('../x\0', 0, 'latin1');
      let sum = 0;
      for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 0x20 : (escaping[i] as number);
      escaping.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
      await assert.rejects(writeTemplate(compress(escaping), dir), /damaged \(at "\.\.\/x"\)/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
