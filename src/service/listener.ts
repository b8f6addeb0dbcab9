/**
 * The service's HTTP server (contract §11): the node bridge with the caps
 * of the configuration on connections, request heads and idle time; every
 * connection refused at arrival counted for GET /metrics and logged at a
 * bounded rate; the caps said once in the log at start.
 */
import { createServer } from 'node:net';
import type { Logger } from '../base/logger.ts';
import type { Config } from '../config/config.ts';
import { trustedProxies } from '../http/client-address.ts';
import { createNodeServer, type NodeServer } from '../http/node-adapter.ts';
import type { ConnectionCap, HttpMetrics } from '../metrics/http-metrics.ts';
import { type App, BODY_TIMEOUT_MS } from '../pipeline/pipeline.ts';

/** contract §11: connections refused as they arrive are logged at most once per this, with their count. */
export const REFUSALS_LOG_INTERVAL_MS = 10_000;

/** The server for `app`, not yet listening; `headersTimeoutMs` shortens contract §11's 10 s (tests). */
export function createListener(
  app: App,
  config: Config,
  metrics: HttpMetrics,
  log: Logger,
  headersTimeoutMs?: number,
): NodeServer {
  const server = createNodeServer(app, {
    // Node's own cap on a whole request, a backstop behind the body's time (408).
    requestTimeoutMs: BODY_TIMEOUT_MS + 5_000,
    ...(headersTimeoutMs === undefined ? {} : { headersTimeoutMs }),
    maxConnections: config.maxConnections,
    maxConnectionsPerAddress: config.maxConnectionsPerAddress,
    // A trusted proxy's connections carry many clients: only the process's cap applies to them.
    ...(config.trustProxy === undefined ? {} : { sharedAddress: trustedProxies(config.trustProxy) }),
    onRefused: refusals(metrics, log),
  });
  const { turns } = app;
  metrics.watch({
    connections: () => server.connections,
    bodyBytes: () => app.bodies.held,
    ...(turns === undefined ? {} : { turns: () => turns }),
  });
  log.info('connections', {
    maxConnections: config.maxConnections,
    maxConnectionsPerAddress: config.maxConnectionsPerAddress,
    fileDescriptorLimit: config.fileDescriptors ?? null,
    bodyBudgetBytes: config.bodyBudgetBytes,
  });
  return server;
}

/**
 * Counts each connection refused at arrival, and logs them at a bounded rate: the first at once, then one
 * `warn` line per `REFUSALS_LOG_INTERVAL_MS` at most, with the count since the last line.
 */
function refusals(metrics: HttpMetrics, log: Logger): (cap: ConnectionCap) => void {
  let last = -Infinity;
  const since = { process: 0, address: 0 };
  return (cap) => {
    metrics.connectionRefused(cap);
    since[cap] += 1;
    const now = performance.now();
    if (now - last < REFUSALS_LOG_INTERVAL_MS) return;
    last = now;
    log.warn('connections refused: past MAX_CONNECTIONS or MAX_CONNECTIONS_PER_ADDRESS', { ...since });
    since.process = 0;
    since.address = 0;
  };
}

/** The listening address cannot be had; the message is one line naming `PORT` or `HOST` and what to change. */
export class ListenError extends Error {
  override name = 'ListenError';
}

/** One line for why `port` on `host` cannot be listened on (node's `listen` error). */
export function listenError(error: unknown, port: number, host: string): ListenError | unknown {
  const code = (error as { code?: unknown }).code;
  if (code === 'EADDRINUSE')
    return new ListenError(
      `PORT ${port} is in use on ${host} (another process listens there); set PORT to a free port`,
    );
  if (code === 'EACCES')
    return new ListenError(`PORT ${port} on ${host} is not allowed to this user (ports below 1024 need privileges)`);
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME')
    return new ListenError(
      `HOST ${host} is not an address of this machine (${code}); set HOST to one of its addresses, such as ` +
        '127.0.0.1, or 0.0.0.0 for all',
    );
  // Anything else (an address family the machine lacks, say): still one line naming both settings.
  if (typeof code === 'string')
    return new ListenError(
      `HOST ${host} and PORT ${port} cannot be listened on (${code}: ${(error as Error).message})`,
    );
  return error;
}

/**
 * Checks that `port` on `host` can be listened on, before start-up changes anything (a new embedded database, its
 * tokens shown once): listens, then lets go. A `ListenError` when it cannot.
 */
export async function checkListen(port: number, host: string): Promise<void> {
  // A client that connects in the moment the port is held is let go at once: close() waits for none.
  const probe = createServer((socket) => socket.destroy());
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject);
      probe.listen({ port, host, exclusive: true }, resolve);
    });
  } catch (error) {
    throw listenError(error, port, host);
  }
  await new Promise((resolve) => probe.close(resolve));
}
