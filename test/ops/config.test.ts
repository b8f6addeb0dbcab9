import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config/config.ts';
import { connectionLimits, fileDescriptorLimit } from '../../src/config/connections.ts';
import { ConfigError } from '../../src/config/values.ts';

describe('loadConfig()', () => {
  it('applies the contract §1 defaults to an empty environment', () => {
    assert.deepEqual(loadConfig({}, 1024), {
      port: 3000,
      host: '127.0.0.1',
      databaseUrl: undefined,
      dataDir: './data',
      dbPoolMax: 10,
      databaseWaitMs: 30_000,
      maxBodyBytes: 1_048_576,
      bodyBudgetBytes: 64 * 1_048_576,
      maxConnections: 768,
      maxConnectionsPerAddress: 24,
      fileDescriptors: 1024,
      rateLimit: { limit: 600, windowSeconds: 60 },
      cacheMaxAge: 60,
      v1DeprecatedAt: new Date('2026-12-01T00:00:00Z'),
      v1SunsetAt: new Date('2027-06-01T00:00:00Z'),
      logLevel: 'info',
      workers: 1,
      webhookAllowPrivate: false,
      dbPrepare: true,
      replicaMaxLagSeconds: 5,
      trustProxyHeader: 'x-forwarded-for',
    });
  });

  it('reads every variable', () => {
    const config = loadConfig({
      PORT: '8080',
      HOST: '0.0.0.0',
      DATABASE_URL: 'postgres://u@db:5432/orders',
      DATA_DIR: '/var/lib/orders',
      DB_POOL_MAX: '4',
      DATABASE_WAIT: '0',
      MAX_BODY_BYTES: '2048',
      RATE_LIMIT: '100/10',
      CACHE_MAX_AGE: '0',
      V1_DEPRECATED_AT: '2026-01-01T00:00:00Z',
      V1_SUNSET_AT: '2026-06-01T12:30:00.5+02:00',
      LOG_LEVEL: 'debug',
    });
    assert.equal(config.port, 8080);
    assert.equal(config.host, '0.0.0.0');
    assert.equal(config.databaseUrl, 'postgres://u@db:5432/orders');
    assert.equal(config.dataDir, '/var/lib/orders');
    assert.equal(config.dbPoolMax, 4);
    assert.equal(config.databaseWaitMs, 0);
    assert.equal(config.maxBodyBytes, 2048);
    assert.deepEqual(config.rateLimit, { limit: 100, windowSeconds: 10 });
    assert.equal(config.cacheMaxAge, 0);
    assert.equal(config.v1SunsetAt.toISOString(), '2026-06-01T10:30:00.500Z');
    assert.equal(config.logLevel, 'debug');
    assert.equal(loadConfig({ WORKERS: '4', DATABASE_URL: 'postgres://u@db/orders' }).workers, 4);
  });

  it('accepts memory: and RATE_LIMIT=off', () => {
    const config = loadConfig({ DATABASE_URL: 'memory:', RATE_LIMIT: 'off' });
    assert.equal(config.databaseUrl, 'memory:');
    assert.equal(config.rateLimit, undefined);
  });

  it('treats an empty variable as unset', () => {
    assert.equal(loadConfig({ PORT: '', DATABASE_URL: '' }).port, 3000);
    assert.equal(loadConfig({ DATABASE_URL: '' }).databaseUrl, undefined);
  });

  const invalid: [Record<string, string>, string][] = [
    [{ PORT: 'eighty' }, 'PORT must be an integer from 0 to 65535, got "eighty"'],
    [{ PORT: '65536' }, 'PORT must be an integer from 0 to 65535, got "65536"'],
    [{ PORT: '-1' }, 'PORT must be an integer from 0 to 65535, got "-1"'],
    [{ DB_POOL_MAX: '0' }, 'DB_POOL_MAX must be an integer from 1 to 1000, got "0"'],
    [{ DATABASE_WAIT: '30s' }, 'DATABASE_WAIT must be an integer from 0 to 3600, got "30s"'],
    [{ MAX_BODY_BYTES: '1.5' }, 'MAX_BODY_BYTES must be an integer from 1 to 1073741824, got "1.5"'],
    [{ CACHE_MAX_AGE: '1e3' }, 'CACHE_MAX_AGE must be an integer from 0 to 31536000, got "1e3"'],
    [{ RATE_LIMIT: '600' }, 'RATE_LIMIT must be <requests>/<window seconds> (e.g. 600/60) or off, got "600"'],
    [{ RATE_LIMIT: '0/60' }, 'RATE_LIMIT must be <requests>/<window seconds> (e.g. 600/60) or off, got "0/60"'],
    [{ LOG_LEVEL: 'verbose' }, 'LOG_LEVEL must be one of debug, info, warn, error, silent, got "verbose"'],
    [
      { V1_SUNSET_AT: 'next year' },
      'V1_SUNSET_AT must be an RFC 3339 timestamp such as 2026-12-01T00:00:00Z, got "next year"',
    ],
    [
      { V1_DEPRECATED_AT: '2026-13-45T00:00:00Z' },
      'V1_DEPRECATED_AT must be an RFC 3339 timestamp such as 2026-12-01T00:00:00Z, got "2026-13-45T00:00:00Z"',
    ],
    [
      { V1_DEPRECATED_AT: '2027-01-01T00:00:00Z', V1_SUNSET_AT: '2026-01-01T00:00:00Z' },
      'V1_SUNSET_AT must not be earlier than V1_DEPRECATED_AT',
    ],
    [
      { DATABASE_URL: 'mysql://root@db/orders' },
      'DATABASE_URL must be a postgres:// URL or memory:, got the scheme mysql:',
    ],
    [{ DATABASE_URL: 'not a url' }, 'DATABASE_URL must be a postgres:// URL or memory:, got an unparsable value'],
    [{ WORKERS: '0' }, 'WORKERS must be an integer from 1 to 64, got "0"'],
    [{ WEBHOOK_ALLOW_PRIVATE: 'yes' }, 'WEBHOOK_ALLOW_PRIVATE must be one of 0, 1, got "yes"'],
    [{ WORKERS: '2' }, 'WORKERS above 1 needs DATABASE_URL: the embedded database serves one process'],
  ];
  for (const [env, message] of invalid) {
    it(`refuses ${JSON.stringify(env)} with one line naming the variable`, () => {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError);
          assert.equal(error.message, message);
          assert.ok(!error.message.includes('\n'));
          return true;
        },
      );
    });
  }

  it('never echoes a DATABASE_URL that may hold a password', () => {
    assert.throws(
      () => loadConfig({ DATABASE_URL: 'mysql://root:s3cret@db/orders' }),
      (error: Error) => !error.message.includes('s3cret'),
    );
  });
});

describe('loadConfig(): contract §16 variables', () => {
  it('leaves CORS_ORIGINS, TRUST_PROXY and METRICS_TOKEN out when unset', () => {
    const config = loadConfig({});
    assert.equal('corsOrigins' in config, false);
    assert.equal('trustProxy' in config, false);
    assert.equal('metricsToken' in config, false);
  });

  it('reads CORS_ORIGINS as origins normalised as browsers send them, each once', () => {
    assert.deepEqual(
      loadConfig({ CORS_ORIGINS: 'https://App.Example:443, http://localhost:5173,https://app.example' }).corsOrigins,
      ['https://app.example', 'http://localhost:5173'],
    );
    assert.equal(loadConfig({ CORS_ORIGINS: '*' }).corsOrigins, '*');
  });

  it('reads TRUST_PROXY as ranges, loopback included', () => {
    assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 2001:db8::1,loopback' }).trustProxy, [
      { network: '10.0.0.0', prefix: 8, family: 'ipv4' },
      { network: '2001:db8::1', prefix: 128, family: 'ipv6' },
      { network: '127.0.0.0', prefix: 8, family: 'ipv4' },
      { network: '::1', prefix: 128, family: 'ipv6' },
    ]);
  });

  it('reads DB_PREPARE and REDIS_URL', () => {
    assert.equal(loadConfig({ DB_PREPARE: 'off' }).dbPrepare, false);
    assert.equal(loadConfig({ DB_PREPARE: 'on' }).dbPrepare, true);
    assert.equal(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379/5' }).redisUrl, 'redis://127.0.0.1:6379/5');
    assert.equal(loadConfig({ REDIS_URL: 'rediss://:pw@cache.internal' }).redisUrl, 'rediss://:pw@cache.internal');
    assert.equal('redisUrl' in loadConfig({}), false);
  });

  it('reads DATABASE_READ_URL and REPLICA_MAX_LAG', () => {
    const config = loadConfig({
      DATABASE_URL: 'postgres://u@primary/orders',
      DATABASE_READ_URL: 'postgres://u@standby/orders',
      REPLICA_MAX_LAG: '2',
    });
    assert.equal(config.databaseReadUrl, 'postgres://u@standby/orders');
    assert.equal(config.replicaMaxLagSeconds, 2);
    assert.equal('databaseReadUrl' in loadConfig({}), false);
    // With Redis, several workers share the positions of the last writes.
    const shared = loadConfig({
      DATABASE_URL: 'postgres://u@primary/orders',
      DATABASE_READ_URL: 'postgres://u@standby/orders',
      WORKERS: '2',
      REDIS_URL: 'redis://127.0.0.1:6379/1',
    });
    assert.equal(shared.workers, 2);
  });

  it('reads METRICS_TOKEN', () => {
    assert.equal(loadConfig({ METRICS_TOKEN: 'scrape-me-0123456789' }).metricsToken, 'scrape-me-0123456789');
  });

  const corsMessage = (entry: string) =>
    'CORS_ORIGINS must be * or a comma-separated list of origins such as https://app.example.com ' +
    `(http or https, host, optional port, no path), got ${JSON.stringify(entry)}`;
  const proxyMessage = (entry: string) =>
    'TRUST_PROXY must be a comma-separated list of IP addresses or CIDR ranges (e.g. 10.0.0.0/8, 2001:db8::/32) ' +
    `or loopback, got ${JSON.stringify(entry)}`;
  const redisMessage = 'REDIS_URL must be redis://[user:password@]host[:port][/db] with db 0 to 15';
  const tokenMessage = 'METRICS_TOKEN must be at least 16 characters of A-Z, a-z, 0-9, -._~+/ (a bearer token)';
  const invalid: [Record<string, string>, string][] = [
    [{ CORS_ORIGINS: 'https://app.example/' }, corsMessage('https://app.example/')],
    [{ CORS_ORIGINS: 'https://app.example/app' }, corsMessage('https://app.example/app')],
    [{ CORS_ORIGINS: 'app.example' }, corsMessage('app.example')],
    [{ CORS_ORIGINS: 'https://a.example,,https://b.example' }, corsMessage('')],
    [{ CORS_ORIGINS: 'https://a.example, *' }, corsMessage('*')],
    [{ CORS_ORIGINS: 'null' }, corsMessage('null')],
    [{ TRUST_PROXY: '10.0.0.0/33' }, proxyMessage('10.0.0.0/33')],
    [{ TRUST_PROXY: '10.0.0.1, proxy.internal' }, proxyMessage('proxy.internal')],
    [{ TRUST_PROXY: '10.0.0.1,' }, proxyMessage('')],
    [{ TRUST_PROXY: '*' }, proxyMessage('*')],
    [{ METRICS_TOKEN: 'short' }, tokenMessage],
    [{ METRICS_TOKEN: 'has a space in the middle' }, tokenMessage],
    [{ DB_PREPARE: 'false' }, 'DB_PREPARE must be one of on, off, got "false"'],
    [
      { TRUST_PROXY_HEADER: 'X-Real-IP' },
      'TRUST_PROXY_HEADER must be one of x-forwarded-for, forwarded, got "X-Real-IP"',
    ],
    [
      { DATABASE_READ_URL: 'postgres://u@standby/orders' },
      'DATABASE_READ_URL needs DATABASE_URL: it names a replica of that server',
    ],
    [
      { DATABASE_URL: 'postgres://u@p/o', DATABASE_READ_URL: 'mysql://standby' },
      'DATABASE_READ_URL must be a postgres:// URL, got the scheme mysql:',
    ],
    [
      { DATABASE_URL: 'postgres://u@p/o', REPLICA_MAX_LAG: '0' },
      'REPLICA_MAX_LAG must be an integer from 1 to 3600, got "0"',
    ],
    [
      { DATABASE_URL: 'postgres://u@p/o', DATABASE_READ_URL: 'postgres://u@s/o', WORKERS: '2' },
      'DATABASE_READ_URL with WORKERS above 1 needs REDIS_URL: every worker must see where a principal last wrote, ' +
        'so that its reads never go to a replica that has not replayed it',
    ],
    [{ REDIS_URL: 'http://127.0.0.1:6379' }, redisMessage],
    [{ REDIS_URL: '127.0.0.1:6379' }, redisMessage],
    [{ REDIS_URL: 'redis://127.0.0.1:6379/16' }, redisMessage],
    [{ REDIS_URL: 'redis://127.0.0.1:6379/a' }, redisMessage],
    [{ REDIS_URL: 'redis://127.0.0.1:6379/?db=2' }, redisMessage],
  ];
  for (const [env, message] of invalid) {
    it(`refuses ${JSON.stringify(env)} with one line naming the variable`, () => {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError);
          assert.equal(error.message, message);
          assert.ok(!error.message.includes('\n'));
          return true;
        },
      );
    });
  }

  it('never echoes a REDIS_URL (it may hold a password)', () => {
    assert.throws(
      () => loadConfig({ REDIS_URL: 'redis://:hunter2hunter2@cache/99' }),
      (error: Error) => !error.message.includes('hunter2'),
    );
  });

  it('never echoes a METRICS_TOKEN', () => {
    assert.throws(
      () => loadConfig({ METRICS_TOKEN: 'secret!secret!secret!' }),
      (error: Error) => !error.message.includes('secret!'),
    );
  });
});

describe('loadConfig(): bodies and connections (contract §11)', () => {
  it('takes the connection caps from the open-files limit: a quarter kept (at least 64), a 32nd per address', () => {
    const caps = (limit: number) => {
      const config = loadConfig({}, limit);
      return [config.maxConnections, config.maxConnectionsPerAddress, config.fileDescriptors];
    };
    assert.deepEqual(caps(256), [192, 6, 256]);
    assert.deepEqual(caps(1024), [768, 24, 1024]);
    assert.deepEqual(caps(65_536), [49_152, 64, 65_536]);
    assert.deepEqual(caps(100), [36, 4, 100]);
    assert.deepEqual(caps(20), [1, 1, 20]);
    // Unknown (not Linux): 1024 assumed.
    assert.deepEqual(connectionLimits({}, undefined), {
      maxConnections: 768,
      maxConnectionsPerAddress: 24,
      fileDescriptors: undefined,
    });
  });

  it('reads MAX_CONNECTIONS, MAX_CONNECTIONS_PER_ADDRESS and BODY_BUDGET_BYTES', () => {
    const config = loadConfig(
      { MAX_CONNECTIONS: '100', MAX_CONNECTIONS_PER_ADDRESS: '10', BODY_BUDGET_BYTES: '2097152' },
      256,
    );
    assert.deepEqual(
      [config.maxConnections, config.maxConnectionsPerAddress, config.bodyBudgetBytes],
      [100, 10, 2_097_152],
    );
    // The per-address default follows the cap given.
    assert.equal(loadConfig({ MAX_CONNECTIONS: '100' }, 256).maxConnectionsPerAddress, 4);
  });

  const refusals: [Record<string, string>, string][] = [
    [{ MAX_CONNECTIONS: '0' }, 'MAX_CONNECTIONS must be an integer from 1 to 1000000, got "0"'],
    [
      { MAX_CONNECTIONS_PER_ADDRESS: 'many' },
      'MAX_CONNECTIONS_PER_ADDRESS must be an integer from 1 to 1000000, got "many"',
    ],
    [
      { MAX_CONNECTIONS: '10', MAX_CONNECTIONS_PER_ADDRESS: '11' },
      'MAX_CONNECTIONS_PER_ADDRESS (11) must not be above MAX_CONNECTIONS (10)',
    ],
    [{ BODY_BUDGET_BYTES: '-1' }, 'BODY_BUDGET_BYTES must be an integer from 1 to 1099511627776, got "-1"'],
    [
      { BODY_BUDGET_BYTES: '1000', MAX_BODY_BYTES: '2000' },
      'BODY_BUDGET_BYTES (1000) must not be below MAX_BODY_BYTES (2000)',
    ],
  ];
  for (const [env, message] of refusals) {
    it(`refuses ${JSON.stringify(env)} with one line naming the variable`, () => {
      assert.throws(() => loadConfig(env, 1024), { name: 'ConfigError', message });
    });
  }

  it('reads the soft limit on open files from /proc/self/limits', () => {
    const limit = fileDescriptorLimit();
    assert.ok(limit === undefined || (Number.isSafeInteger(limit) && limit > 0));
    assert.equal(fileDescriptorLimit('/nonexistent/limits'), undefined);
  });
});

describe('loadConfig(): a password that needs percent-encoding', () => {
  const SAID =
    'its user name or password holds an "@", "/", "?" or "#" that is not percent-encoded, so the host would be ' +
    'read from inside it; write them as %40, %2F, %3F and %23 (encodeURIComponent() does)';
  for (const password of ['p@ss', 'pa/ss', 'pa?ss', 'pa#ss', 'a@b/c']) {
    it(`refuses a password ${JSON.stringify(password)} written as it is, never echoing it; takes it encoded`, () => {
      for (const name of ['DATABASE_URL', 'DATABASE_READ_URL']) {
        const written = `postgres://orders:${password}@db.internal:5432/orders`;
        const env = { DATABASE_URL: 'postgres://u@p/o', [name]: written };
        assert.throws(() => loadConfig(env, 1024), { name: 'ConfigError', message: `${name}: ${SAID}` });
        const encoded = `postgres://orders:${encodeURIComponent(password)}@db.internal:5432/orders`;
        assert.equal(
          loadConfig({ ...env, [name]: encoded }, 1024)[name === 'DATABASE_URL' ? 'databaseUrl' : 'databaseReadUrl'],
          encoded,
        );
      }
    });
  }
  it('takes a plain password with a query, a user without a password, and no user at all', () => {
    for (const url of ['postgres://u:pw@h/db?application_name=orders', 'postgres://u@h/db', 'postgres://h/db'])
      assert.equal(loadConfig({ DATABASE_URL: url }, 1024).databaseUrl, url);
  });
});

describe('loadConfig(): several hosts (contract §17)', () => {
  it('takes a URL of several hosts with target_session_attrs, as libpq writes it', () => {
    const url = 'postgres://orders:s3cret@db1:5432,db2:5433,10.0.0.7/orders?target_session_attrs=read-write';
    assert.equal(loadConfig({ DATABASE_URL: url }, 1024).databaseUrl, url);
    for (const attrs of ['any', 'read-write', 'read-only', 'primary', 'standby', 'prefer-standby']) {
      const read = `postgres://u@db1,db2/orders?target_session_attrs=${attrs}`;
      assert.equal(
        loadConfig({ DATABASE_URL: 'postgres://u@p/o', DATABASE_READ_URL: read }, 1024).databaseReadUrl,
        read,
      );
    }
  });

  const refusals: [Record<string, string>, string][] = [
    [
      { DATABASE_URL: 'postgres://u@db1,db2/o?target_session_attrs=primaryy' },
      "DATABASE_URL's target_session_attrs must be one of any, read-write, read-only, primary, standby, " +
        'prefer-standby, got "primaryy"',
    ],
    [
      { DATABASE_URL: 'postgres://u@db1,db2:99999/o' },
      'DATABASE_URL lists the host "db2:99999": each host of several is a name or IPv4 address with an optional ' +
        'port (host:5432)',
    ],
    [
      { DATABASE_URL: 'postgres://u@db1,[::1]:5432/o' },
      'DATABASE_URL lists the host "[::1]:5432": each host of several is a name or IPv4 address with an optional ' +
        'port (host:5432)',
    ],
    [
      { DATABASE_URL: 'postgres://u@db1,/o' },
      'DATABASE_URL lists the host "": each host of several is a name or IPv4 address with an optional port ' +
        '(host:5432)',
    ],
    [
      { DATABASE_URL: 'postgres://u@p/o', DATABASE_READ_URL: 'postgres://u@r1,r2/o?target_session_attrs=replica' },
      "DATABASE_READ_URL's target_session_attrs must be one of any, read-write, read-only, primary, standby, " +
        'prefer-standby, got "replica"',
    ],
  ];
  for (const [env, message] of refusals) {
    it(`refuses ${JSON.stringify(env)} with one line naming the variable and the parameter`, () => {
      assert.throws(() => loadConfig(env, 1024), { name: 'ConfigError', message });
    });
  }

  it('never echoes a URL of several hosts (it may hold a password)', () => {
    assert.throws(
      () => loadConfig({ DATABASE_URL: 'postgres://u:hunter2@db1,db 2/o' }, 1024),
      (error: unknown) => !(error as Error).message.includes('hunter2'),
    );
  });
});
