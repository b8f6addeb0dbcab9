/**
 * The service with the webhook worker's timings made short (a 1 s lease,
 * 20 ms polls), for the tests that kill and restart processes. A test-only
 * entry point: production has no setting for these.
 */
import { loadConfig } from '../../src/config/config.ts';
import { startServer } from '../../src/service/server.ts';

const server = await startServer(loadConfig(), {
  webhooks: { pollMs: 20, leaseSeconds: 1, retryDelaysSeconds: [0.05, 0.05, 0.05], timeoutMs: 5000 },
});
process.stderr.write(`orders: listening on ${server.url} (database: ${server.db.kind})\n`);
process.once('SIGTERM', () => {
  server.close().then(() => process.exit(0));
});
