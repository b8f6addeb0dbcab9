/**
 * The innermost stage of createApp(): a handler that is not an async function and throws before it returns a
 * promise is answered as an async handler that rejects (500 `internal`, its turn given back), never a throw out of
 * the app.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Authenticator } from '../../src/auth/authenticator.ts';
import { createLogger } from '../../src/base/logger.ts';
import { loadConfig } from '../../src/config/config.ts';
import type { Database } from '../../src/db/database.ts';
import type { RouteSpec } from '../../src/pipeline/context.ts';
import { createApp } from '../../src/pipeline/pipeline.ts';

describe('createApp(): a handler that throws at once', () => {
  const route = (pattern: string, handler: RouteSpec['handler']): RouteSpec => ({
    method: 'GET',
    pattern,
    auth: 'public',
    versioned: false,
    doc: { summary: pattern, success: { status: 200 } },
    handler,
  });
  const authenticator: Authenticator = {
    authenticate: async () => {
      throw new Error('no token is needed here');
    },
  };

  it('answers 500 as for one that rejects, its turn given back', async () => {
    const lines: { message?: string; error?: { message?: string } }[] = [];
    const app = createApp(
      {
        config: loadConfig({}),
        db: {} as Database,
        cursorKeys: { keys: [new Uint8Array(32)], reload: async () => {}, stop: () => {} },
        log: createLogger('info', (line) => lines.push(JSON.parse(line))),
        authenticator,
      },
      [
        route('/at-once', () => {
          throw new Error('thrown at once');
        }),
        route('/later', async () => {
          throw new Error('thrown later');
        }),
      ],
    );
    for (const [path, message] of [
      ['/at-once', 'thrown at once'],
      ['/later', 'thrown later'],
    ]) {
      const response = await app(new Request(`http://localhost${path}`), { remoteAddress: '192.0.2.1' });
      assert.equal(response.status, 500, path);
      assert.equal((await response.json()).type, '/problems/internal', path);
      assert.equal(app.turns?.inFlight, 0, `${path}: the turn given back`);
      assert.equal(
        lines.find((l) => l.message === 'unhandled error' && l.error?.message === message) !== undefined,
        true,
      );
    }
  });
});
