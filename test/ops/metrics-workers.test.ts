/**
 * GET /metrics with `WORKERS=N` (contract §13): one view per instance. The
 * merge of figures and the primary's bookkeeping on their own (fake workers,
 * exact sums); then two real workers, scraped on new connections so that
 * both answer: counts exact whichever answers, every counter and histogram
 * non-decreasing, a worker killed with SIGKILL still counted after the
 * primary started another, and the sum valid for `promtool check metrics`.
 * The processes need a real PostgreSQL server.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../src/base/logger.ts';
import {
  createInstanceFigures,
  type InstanceView,
  type MetricsMessage,
  type Peer,
} from '../../src/metrics/instance.ts';
import {
  atLeast,
  EMPTY_SNAPSHOT,
  mergeSnapshots,
  renderFamilies,
  retired,
  type Snapshot,
} from '../../src/metrics/snapshot.ts';
import { createTestDatabase, REAL_SERVER_URL, type TestDatabase } from '../support/database.ts';
import { rawRequest } from '../support/http.ts';
import { startService, type ServiceProcess, waitForOutput } from '../support/process.ts';

const REQUESTS = '{route="/products",method="GET",status="200"}';
const hasPromtool = spawnSync('promtool', ['--version']).error === undefined;
const SCRAPES = '{route="/metrics",method="GET",status="200"}';

/** `counters`, `histograms` and `gauges` as given, the others empty. */
function snapshot(parts: Partial<Snapshot>): Snapshot {
  return { ...EMPTY_SNAPSHOT, ...parts };
}

describe('mergeSnapshots()', () => {
  const a = snapshot({
    counters: { x_total: { '{s="200"}': 3, '{s="404"}': 1 }, y_total: { '': 2 } },
    histograms: { d_seconds: { '{m="GET"}': { buckets: [1, 0, 2], sum: 0.75, count: 3 } } },
    gauges: { g: { '': 10 } },
  });
  const b = snapshot({
    counters: { x_total: { '{s="200"}': 4, '{s="500"}': 2 } },
    histograms: {
      d_seconds: {
        '{m="GET"}': { buckets: [0, 1, 1], sum: 1.5, count: 2 },
        '{m="POST"}': { buckets: [1, 0, 0], sum: 0.25, count: 1 },
      },
    },
    gauges: { g: { '': 5 }, h: { '': 1 } },
  });

  it('sums counters, histograms bucket by bucket, and gauges, series by series, in the order they first appear', () => {
    assert.deepEqual(mergeSnapshots([a, b]), {
      counters: { x_total: { '{s="200"}': 7, '{s="404"}': 1, '{s="500"}': 2 }, y_total: { '': 2 } },
      histograms: {
        d_seconds: {
          '{m="GET"}': { buckets: [1, 1, 3], sum: 2.25, count: 5 },
          '{m="POST"}': { buckets: [1, 0, 0], sum: 0.25, count: 1 },
        },
      },
      gauges: { g: { '': 15 }, h: { '': 1 } },
    });
    assert.deepEqual(mergeSnapshots([]), EMPTY_SNAPSHOT);
    assert.deepEqual(mergeSnapshots([a]), a);
  });

  it("keeps an exited process's counters and histograms, not its gauges (retired)", () => {
    assert.deepEqual(mergeSnapshots([retired(a), b]).gauges, { g: { '': 5 }, h: { '': 1 } });
    assert.deepEqual(mergeSnapshots([retired(a), b]).counters, mergeSnapshots([a, b]).counters);
  });

  it('never lets a counter or histogram figure go below the last view (atLeast)', () => {
    const lower = snapshot({
      counters: { x_total: { '{s="200"}': 2 } },
      histograms: { d_seconds: { '{m="GET"}': { buckets: [2, 0, 0], sum: 0.5, count: 2 } } },
      gauges: { g: { '': 1 } },
    });
    assert.deepEqual(atLeast(a, lower), {
      counters: { x_total: { '{s="200"}': 3, '{s="404"}': 1 }, y_total: { '': 2 } },
      histograms: { d_seconds: { '{m="GET"}': { buckets: [2, 0, 2], sum: 0.75, count: 3 } } },
      gauges: { g: { '': 1 } },
    });
  });

  it('renders a merged histogram cumulatively, with le among the labels', () => {
    const text = renderFamilies(mergeSnapshots([a, b]), [
      { name: 'd_seconds', type: 'histogram', help: 'D.', buckets: [0.1, 1] },
      { name: 'g', type: 'gauge', help: 'G.' },
      { name: 'none_total', type: 'counter', help: 'None.' },
    ]);
    assert.equal(
      text,
      [
        '# HELP d_seconds D.\n# TYPE d_seconds histogram\n',
        'd_seconds_bucket{m="GET",le="0.1"} 1\nd_seconds_bucket{m="GET",le="1"} 2\n',
        'd_seconds_bucket{m="GET",le="+Inf"} 5\nd_seconds_sum{m="GET"} 2.25\nd_seconds_count{m="GET"} 5\n',
        'd_seconds_bucket{m="POST",le="0.1"} 1\nd_seconds_bucket{m="POST",le="1"} 1\n',
        'd_seconds_bucket{m="POST",le="+Inf"} 1\nd_seconds_sum{m="POST"} 0.25\nd_seconds_count{m="POST"} 1\n',
        '# HELP g G.\n# TYPE g gauge\ng 15\n',
        '# HELP none_total None.\n# TYPE none_total counter\n',
      ].join(''),
    );
  });
});

/** A worker as the primary sees it, whose messages from the primary a test awaits one by one. */
interface FakeWorker extends Peer {
  /** The next message the primary sends this worker. */
  next(): Promise<MetricsMessage>;
  /** Nothing more was sent. */
  idle(): boolean;
}

function fakeWorker(id: number): FakeWorker {
  const inbox: MetricsMessage[] = [];
  const waiting: ((message: MetricsMessage) => void)[] = [];
  return {
    id,
    send(message, callback) {
      const taker = waiting.shift();
      if (taker === undefined) inbox.push(message);
      else taker(message);
      callback(null);
      return true;
    },
    next() {
      const message = inbox.shift();
      if (message !== undefined) return Promise.resolve(message);
      return new Promise((resolve) => waiting.push(resolve));
    },
    idle() {
      return inbox.length === 0;
    },
  };
}

const counted = (n: number, cpu = 0): Snapshot =>
  snapshot({
    counters: { orders_http_requests_total: { [SCRAPES]: n }, process_cpu_seconds_total: { '': cpu } },
    gauges: { orders_db_pool_max_connections: { '': 10 } },
  });

describe("the primary's instance figures (createInstanceFigures)", () => {
  const own = snapshot({ gauges: { process_start_time_seconds: { '': 1700000000 } } });
  const warnings: string[] = [];
  const log = createLogger('warn', (line) => warnings.push(line));
  const figures = createInstanceFigures(log, { timeoutMs: 50, own: () => own });
  const [a, b, c] = [fakeWorker(1), fakeWorker(2), fakeWorker(3)];
  /** `asker`'s question with its own figures; the other workers' answers, by id; the view it gets. */
  const ask = async (asker: FakeWorker, mine: Snapshot, answers: Map<FakeWorker, Snapshot>) => {
    assert.equal(figures.onMessage(asker, { metrics: 'view?', id: 7, figures: mine }), true);
    for (const [worker, theirs] of answers) {
      const question = await worker.next();
      assert.equal(question.metrics, 'figures?');
      figures.onMessage(worker, { metrics: 'figures', id: question.id, figures: theirs });
    }
    const answer = await asker.next();
    assert.equal(answer.metrics, 'view');
    assert.equal(answer.id, 7);
    return (answer as { view: InstanceView }).view;
  };

  it('ignores the messages that are not its own', () => {
    assert.equal(figures.onMessage(a, { listening: 'http://127.0.0.1:1', database: 'postgres' }), false);
  });

  it("sums the asker's figures, the other live workers' and its own", async () => {
    figures.join(a);
    figures.join(b);
    const view = await ask(a, counted(3, 0.5), new Map([[b, counted(4, 0.25)]]));
    assert.deepEqual(view, {
      figures: snapshot({
        counters: { orders_http_requests_total: { [SCRAPES]: 7 }, process_cpu_seconds_total: { '': 0.75 } },
        gauges: { orders_db_pool_max_connections: { '': 20 }, process_start_time_seconds: { '': 1700000000 } },
      }),
      workers: 2,
      stale: 0,
    });
  });

  it("keeps an exited worker's counters in every later sum, and drops its gauges", async () => {
    figures.leave(b);
    const view = await ask(a, counted(5, 1), new Map());
    assert.deepEqual(view.figures.counters, {
      orders_http_requests_total: { [SCRAPES]: 9 },
      process_cpu_seconds_total: { '': 1.25 },
    });
    assert.deepEqual(view.figures.gauges.orders_db_pool_max_connections, { '': 10 });
    assert.equal(view.workers, 1);
    assert.ok(b.idle(), 'an exited worker is asked nothing');
  });

  it('counts a worker that does not answer in time with its last figures, and logs it', async () => {
    figures.join(c);
    await ask(a, counted(5, 1), new Map([[c, counted(2)]]));
    // c is asked again and stays silent: its last figures (2) stand in after 50 ms.
    assert.equal(figures.onMessage(a, { metrics: 'view?', id: 8, figures: counted(6, 1) }), true);
    const question = await c.next();
    const answer = (await a.next()) as { id: number; view: InstanceView };
    assert.equal(answer.id, 8);
    assert.deepEqual(answer.view.figures.counters.orders_http_requests_total, { [SCRAPES]: 12 });
    assert.equal(answer.view.stale, 1);
    assert.match(warnings.join(''), /"message":"metrics: workers sent no figures in time; their last ones stand in"/);
    // Its late answer is its last figures from then on.
    figures.onMessage(c, { metrics: 'figures', id: question.id, figures: counted(3) });
    const view = await ask(a, counted(6, 1), new Map([[c, counted(3)]]));
    assert.deepEqual(view.figures.counters.orders_http_requests_total, { [SCRAPES]: 13 });
  });

  it('never gives a view below the last one', async () => {
    // Figures that went back (no worker sends them) leave the view where it was.
    const view = await ask(a, counted(0), new Map([[c, counted(0)]]));
    assert.deepEqual(view.figures.counters.orders_http_requests_total, { [SCRAPES]: 13 });
  });
});

/** GET `url` on a connection of its own (`Connection: close`), so that any worker may take it. */
const get = (url: string, headers: Record<string, string> = {}) => rawRequest(url, { headers });

/** The value of the sample `name` + `labelText` in `text`; `undefined` when absent. */
function sampleValue(text: string, name: string, labelText = ''): number | undefined {
  const prefix = `${name}${labelText} `;
  const line = text.split('\n').find((l) => l.startsWith(prefix));
  return line === undefined ? undefined : Number(line.slice(prefix.length));
}

/** Every sample of the counter and histogram families in `text`, by series (name and labels). */
function monotonicSamples(text: string): Map<string, number> {
  const types = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1] as string, m[2] as string]));
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    const series = line.slice(0, at);
    const name = series.replace(/\{.*$/, '');
    const type = types.get(name) ?? types.get(name.replace(/_(bucket|sum|count)$/, ''));
    if (type === 'counter' || type === 'histogram') samples.set(series, Number(line.slice(at + 1)));
  }
  return samples;
}

/** The `worker` id → `pid` of every "listening" line the workers logged so far. */
function workerPids(stdout: string): Map<number, number> {
  const lines = stdout.matchAll(/"message":"listening",[^\n]*"worker":(\d+),"pid":(\d+)/g);
  return new Map([...lines].map((m) => [Number(m[1]), Number(m[2])]));
}

describe('WORKERS=2: GET /metrics answers for the instance', {
  skip: REAL_SERVER_URL ? false : 'needs a real PostgreSQL server (WORKERS > 1)',
}, () => {
  let database: TestDatabase;
  let service: ServiceProcess;
  /** The successful scrapes so far, each counted by the worker that answered it. */
  let scrapes = 0;
  let previous: Map<string, number> | undefined;
  let startTime: number | undefined;

  before(async () => {
    database = await createTestDatabase();
    service = await startService(
      { DATABASE_URL: database.url, WORKERS: '2', LOG_LEVEL: 'debug' },
      /listening on (http:\/\/\S+) \(database: postgres, 2 workers\)/,
    );
  });
  after(async () => {
    if (service.process.exitCode === null && service.process.signalCode === null) {
      service.process.kill('SIGTERM');
      await once(service.process, 'exit');
    }
    await database.drop();
  });

  /**
   * One scrape on a new connection: which worker answered it (its log line),
   * the scrapes counted exactly (every worker answered the primary in time),
   * and no counter or histogram series below the last scrape's or missing.
   */
  const scrape = async (): Promise<{ text: string; pid: number }> => {
    const requestId = `metrics-workers-${scrapes}`;
    const { status, text: body } = await get(`${service.url}/metrics`, { 'x-request-id': requestId });
    assert.equal(status, 200, body);
    const line = new RegExp(
      `"message":"metrics: instance view","requestId":"${requestId}","pid":(\\d+),"workers":(\\d+),"stale":(\\d+)`,
    );
    const [, pid, , stale] = await waitForOutput(service, 'stdout', (text) => line.exec(text) ?? undefined);
    assert.equal(stale, '0');
    assert.equal(sampleValue(body, 'orders_http_requests_total', SCRAPES) ?? 0, scrapes);
    scrapes += 1;
    const now = monotonicSamples(body);
    for (const [series, value] of previous ?? []) {
      const later = now.get(series);
      assert.ok(later !== undefined && later >= value, `${series}: ${value}, then ${later}`);
    }
    previous = now;
    // The instance's start time: the primary's, whichever worker answers, a worker's death included.
    const start = sampleValue(body, 'process_start_time_seconds');
    startTime ??= start;
    assert.equal(start, startTime);
    return { text: body, pid: Number(pid) };
  };

  // Bounded: a scrape whose worker never logs its answer fails the test instead of hanging it.
  it("sums every worker's requests whichever answers, and keeps a killed worker's", { timeout: 60_000 }, async () => {
    // The workers' own "listening" lines may follow the primary's.
    const first = await waitForOutput(service, 'stdout', (text) => {
      const pids = workerPids(text);
      return pids.size === 2 ? pids : undefined;
    });
    const sent = 30;
    for (let i = 0; i < sent; i++) assert.equal((await get(`${service.url}/v2/products`)).status, 200);
    const answered: number[] = [];
    let last = '';
    for (let i = 0; i < 20; i++) {
      const { text, pid } = await scrape();
      answered.push(pid);
      last = text;
    }
    assert.deepEqual(new Set(answered), new Set(first.values()), 'both workers answered scrapes');
    assert.equal(sampleValue(last, 'orders_http_requests_total', REQUESTS), sent);
    assert.equal(
      sampleValue(last, 'orders_http_request_duration_seconds_count', '{route="/products",method="GET"}'),
      sent,
    );
    assert.equal(sampleValue(last, 'orders_db_pool_max_connections'), 20);

    // The last scrape asked the other worker for its figures: all of them, its own scrapes included.
    const victim = [...first.values()].find((pid) => pid !== answered.at(-1)) as number;
    process.kill(victim, 'SIGKILL');
    const [replacement] = await waitForOutput(service, 'stdout', (text) => {
      const started = [...workerPids(text).values()].filter((pid) => ![...first.values()].includes(pid));
      return started.length > 0 ? started : undefined;
    });

    const more = 10;
    for (let i = 0; i < more; i++) assert.equal((await get(`${service.url}/v2/products`)).status, 200);
    const survivor = answered.at(-1) as number;
    const after: number[] = [];
    for (let i = 0; i < 40 && !(after.includes(survivor) && after.includes(replacement as number)); i++)
      after.push((await scrape()).pid);
    assert.ok(after.includes(survivor) && after.includes(replacement as number), `answered by ${after.join(', ')}`);
    // Every scrape the killed worker answered is still counted (scrape() checks the exact total), and so are
    // the requests it served.
    assert.ok(answered.includes(victim));
    const { text } = await scrape();
    assert.equal(sampleValue(text, 'orders_http_requests_total', REQUESTS), sent + more);
    assert.equal(sampleValue(text, 'orders_db_pool_max_connections'), 20);
  });

  it('gives a sum that passes promtool check metrics with no error and no warning', {
    skip: !hasPromtool && 'promtool is not installed (Debian: apt-get install prometheus); CI installs it',
  }, async () => {
    const { text } = await scrape();
    const checked = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    assert.equal(checked.status, 0, checked.stdout + checked.stderr);
    assert.equal(checked.stdout + checked.stderr, '');
  });
});
