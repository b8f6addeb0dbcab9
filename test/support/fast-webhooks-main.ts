/**
 * The service with the webhook worker's timings made short (a 2 s lease,
 * 20 ms polls, a 1 s time-out), for the tests that kill and restart
 * processes; `FAST_WEBHOOKS` (JSON, some of the worker's options) overrides
 * them. A test-only entry point: production has no setting for these.
 */
import { loadConfig } from '../../src/config/config.ts';
import { startServer } from '../../src/service/server.ts';
import type { WorkerOptions } from '../../src/webhooks/worker.ts';

const webhooks: Partial<Omit<WorkerOptions, 'allowPrivate'>> = {
  pollMs: 20,
  leaseSeconds: 2,
  retryDelaysSeconds: [0.05, 0.05, 0.05],
  timeoutMs: 1000,
  ...(process.env.FAST_WEBHOOKS ? JSON.parse(process.env.FAST_WEBHOOKS) : {}),
};
const server = await startServer(loadConfig(), { webhooks });
process.stderr.write(`orders: listening on ${server.url} (database: ${server.db.kind})\n`);
process.once('SIGTERM', () => {
  server.close().then(() => process.exit(0));
});
