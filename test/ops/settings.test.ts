/** The list of settings that `.env` names are checked against (src/config/settings.ts). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config/config.ts';
import { misspeltSettings, SETTINGS, unknownSettings } from '../../src/config/settings.ts';

describe('SETTINGS', () => {
  it('holds every variable loadConfig() reads, and ENV_STRICT, and nothing else', () => {
    const read = new Set<string>();
    const env = new Proxy({} as Record<string, string | undefined>, {
      get: (_, name) => {
        if (typeof name === 'string') read.add(name);
        return undefined;
      },
    });
    loadConfig(env, 1024);
    assert.deepEqual([...read].sort(), SETTINGS.filter((name) => name !== 'ENV_STRICT').sort());
  });
});

describe('unknownSettings()', () => {
  it('says each name that is no setting, with the closest one when close, in file order', () => {
    const lines = unknownSettings(
      new Map([
        ['PORT', 1],
        ['DATABSE_URL', 2],
        ['LOGLEVEL', 3],
        ['PGPASSWORD', 4],
        ['NODE_OPTIONS', 5],
        ['REDIS_ULR', 6],
      ]),
    );
    assert.deepEqual(lines, [
      '.env line 2: DATABSE_URL is not a setting of the service; did you mean DATABASE_URL?',
      '.env line 3: LOGLEVEL is not a setting of the service; did you mean LOG_LEVEL?',
      '.env line 5: NODE_OPTIONS is not a setting of the service (it is ignored)',
      '.env line 6: REDIS_ULR is not a setting of the service; did you mean REDIS_URL?',
    ]);
  });
});

describe('misspeltSettings()', () => {
  it("says each name of the environment that is a near miss of a setting, and none of other programs' names", () => {
    assert.deepEqual(
      misspeltSettings([
        'DATABSE_URL',
        'PATH',
        'USER',
        'HOME',
        'HOSTNAME',
        'PGDATA',
        'PGSSLMODE',
        'NODE_OPTIONS',
        'MAKELEVEL',
        'DB_POOLMAX',
        'LOG_LEVLE',
        'PORT',
      ]),
      [
        'environment: DATABSE_URL is not a setting of the service; did you mean DATABASE_URL?',
        'environment: DB_POOLMAX is not a setting of the service; did you mean DB_POOL_MAX?',
        'environment: LOG_LEVLE is not a setting of the service; did you mean LOG_LEVEL?',
      ],
    );
  });
});
