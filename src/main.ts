/** `make run`: start the service with the configuration of the environment (SPEC §1). */
import { ConfigError, loadConfig } from './config.ts';
import { createLogger } from './log.ts';
import { startServer } from './server.ts';
import { MigrationError } from './db/migrate.ts';
import { EmbeddedDatabaseError } from './db/embedded.ts';

async function main(): Promise<void> {
  const startedAt = performance.now();
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`orders: invalid configuration: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const log = createLogger(config.logLevel);
  let server;
  try {
    server = await startServer(config, {
      log,
      onDemoTokens: (tokens) => {
        process.stderr.write(
          '\nA new embedded database was created with the demo catalog and users.\n' +
            'These tokens are shown once; keep them:\n' +
            `  admin:    ${tokens.admin}\n` +
            `  customer: ${tokens.customer}\n\n`,
        );
      },
    });
  } catch (error) {
    if (error instanceof MigrationError || error instanceof EmbeddedDatabaseError) {
      process.stderr.write(`orders: cannot start: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  const database = server.db.kind === 'embedded' ? (config.databaseUrl === 'memory:' ? 'embedded (in memory)' : `embedded (${config.dataDir})`) : 'postgres';
  log.info('listening', { url: server.url, database, startupMs: Math.round(performance.now() - startedAt) });
  process.stderr.write(`orders: listening on ${server.url} (database: ${database})\n`);

  const stop = (signal: string) => {
    log.info('shutting down', { signal });
    server.close().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`orders: shutdown failed: ${String(error)}\n`);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

await main();
