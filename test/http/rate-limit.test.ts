import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createApp } from '../../src/pipeline/pipeline.ts';
import type { RouteSpec } from '../../src/pipeline/context.ts';
import type { Authenticator } from '../../src/auth/authenticator.ts';
import { loadConfig } from '../../src/config/config.ts';
import type { Database } from '../../src/db/database.ts';
import { addressGroup, createRateLimiter, decide, rateLimitField } from '../../src/http/rate-limit.ts';
import { HttpError } from '../../src/http/problem.ts';
import { createLogger } from '../../src/base/logger.ts';

describe('createRateLimiter()', () => {
  it('allows `limit` requests per window, then refuses until the window resets', () => {
    let now = 0;
    const limiter = createRateLimiter({ limit: 3, windowSeconds: 60 }, () => now);
    assert.deepEqual(limiter.consume('a'), { allowed: true, remaining: 2, resetSeconds: 60 });
    now = 10_000;
    assert.deepEqual(limiter.consume('a'), { allowed: true, remaining: 1, resetSeconds: 50 });
    assert.deepEqual(limiter.consume('a'), { allowed: true, remaining: 0, resetSeconds: 50 });
    assert.deepEqual(limiter.consume('a'), { allowed: false, remaining: 0, resetSeconds: 50 });
    now = 59_500;
    assert.deepEqual(limiter.consume('a'), { allowed: false, remaining: 0, resetSeconds: 1 });
    now = 60_000;
    assert.deepEqual(limiter.consume('a'), { allowed: true, remaining: 2, resetSeconds: 60 });
  });

  it('says 60 seconds for a fresh window whatever the fractional clock reading', () => {
    // (15906.655173728135 + 60000) - 15906.655173728135 is 60000.000000000007 in
    // floating point: computed that way, a fresh window announced t=61.
    const now = 15_906.655173728135;
    const limiter = createRateLimiter({ limit: 3, windowSeconds: 60 }, () => now);
    assert.equal(limiter.consume('a').resetSeconds, 60);
  });

  it('counts each key apart', () => {
    const limiter = createRateLimiter({ limit: 1, windowSeconds: 1 }, () => 0);
    assert.equal(limiter.consume('a').allowed, true);
    assert.equal(limiter.consume('b').allowed, true);
    assert.equal(limiter.consume('a').allowed, false);
  });

  it('keeps its table bounded: 100,000 distinct clients over 100 s leave at most 10,000 keys', () => {
    let now = 0;
    const limiter = createRateLimiter({ limit: 600, windowSeconds: 60 }, () => now);
    for (let i = 0; i < 100_000; i++) {
      now += 1;
      limiter.consume(`address:10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    }
    assert.equal(limiter.size, 10_000);
  });

  describe('when the table is full of running windows', () => {
    it('never frees a running window: a flood of new keys leaves a limited key limited', () => {
      let now = 0;
      const limiter = createRateLimiter({ limit: 5, windowSeconds: 60 }, () => now, 100);
      for (let i = 0; i < 5; i++) limiter.consume('address:192.0.2.1');
      assert.deepEqual(limiter.consume('address:192.0.2.1'), { allowed: false, remaining: 0, resetSeconds: 60 });
      now = 1_000;
      for (let i = 0; i < 12_000; i++) limiter.consume(`address:10.0.${i >> 8}.${i & 255}`);
      assert.equal(limiter.size, 100);
      assert.deepEqual(limiter.consume('address:192.0.2.1'), { allowed: false, remaining: 0, resetSeconds: 59 });
    });

    it('counts every new key in one shared overflow window, with its own reset', () => {
      let now = 0;
      const limiter = createRateLimiter({ limit: 2, windowSeconds: 60 }, () => now, 2);
      limiter.consume('a');
      limiter.consume('b');
      now = 10_000;
      assert.deepEqual(limiter.consume('c'), { allowed: true, remaining: 1, resetSeconds: 60 });
      assert.deepEqual(limiter.consume('d'), { allowed: true, remaining: 0, resetSeconds: 60 });
      assert.deepEqual(limiter.consume('c'), { allowed: false, remaining: 0, resetSeconds: 60 });
      // The keys in the table keep their own budgets.
      assert.deepEqual(limiter.consume('a'), { allowed: true, remaining: 0, resetSeconds: 50 });
      assert.equal(limiter.size, 2);
    });

    it('gives a new key a window of its own as soon as the earliest window ends', () => {
      let now = 0;
      const limiter = createRateLimiter({ limit: 2, windowSeconds: 60 }, () => now, 2);
      limiter.consume('a');
      now = 30_000;
      limiter.consume('b');
      assert.equal(limiter.consume('c').remaining, 1, 'overflow');
      assert.equal(limiter.consume('c').remaining, 0, 'overflow');
      now = 60_000;
      // "a" ended: "c" takes its place; "b" still runs.
      assert.deepEqual(limiter.consume('c'), { allowed: true, remaining: 1, resetSeconds: 60 });
      assert.deepEqual(limiter.consume('b'), { allowed: true, remaining: 0, resetSeconds: 30 });
      assert.equal(limiter.consume('d').allowed, false, 'overflow, spent until 120 s');
      now = 120_000;
      assert.deepEqual(limiter.consume('d'), { allowed: true, remaining: 1, resetSeconds: 60 });
    });
  });

  it('refuses a table that could hold no key', () => {
    assert.throws(() => createRateLimiter({ limit: 1, windowSeconds: 1 }, Date.now, 0), {
      name: 'RangeError',
      message: 'maxKeys must be a positive integer, got 0',
    });
  });

  it('states its policy', () => {
    assert.equal(createRateLimiter({ limit: 600, windowSeconds: 60 }).policy, '"default";q=600;w=60');
  });
});

describe('decide()', () => {
  // The rule both the local tables and the windows shared through Redis (src/limits/) apply.
  const cases: [number, number, number, ReturnType<typeof decide>][] = [
    [600, 1, 60_000, { allowed: true, remaining: 599, resetSeconds: 60 }],
    [10, 10, 59_001, { allowed: true, remaining: 0, resetSeconds: 60 }],
    [10, 11, 59_000, { allowed: false, remaining: 0, resetSeconds: 59 }],
    [10, 25, 1, { allowed: false, remaining: 0, resetSeconds: 1 }],
    // A window whose time is up as it is counted still says at least 1 s.
    [10, 3, 0, { allowed: true, remaining: 7, resetSeconds: 1 }],
  ];
  for (const [limit, count, msLeft, expected] of cases) {
    it(`decides request ${count} of ${limit} with ${msLeft} ms left`, () => {
      assert.deepEqual(decide(limit, count, msLeft), expected);
    });
  }
});

describe('rateLimitField()', () => {
  it('renders remaining and reset', () => {
    assert.equal(rateLimitField({ allowed: true, remaining: 599, resetSeconds: 60 }), '"default";r=599;t=60');
  });
});

describe('addressGroup()', () => {
  const cases: [string, string][] = [
    ['192.0.2.1', '192.0.2.1'],
    ['203.0.113.255', '203.0.113.255'],
    // RFC 4291 §2.5.5.2: an IPv4-mapped address is the IPv4 client.
    ['::ffff:192.0.2.1', '192.0.2.1'],
    ['::FFFF:192.0.2.1', '192.0.2.1'],
    ['::ffff:c000:201', '192.0.2.1'],
    ['0:0:0:0:0:ffff:192.0.2.1', '192.0.2.1'],
    // IPv6: the /64, in one spelling whatever the address's.
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::ffff', '2001:db8:1:2::/64'],
    ['2001:0DB8:0001:0002:aaaa:bbbb:cccc:dddd', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['2001:db8:1:3::1', '2001:db8:1:3::/64'],
    ['::1', '0:0:0:0::/64'],
    ['::', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['64:ff9b::192.0.2.1', '64:ff9b:0:0::/64'],
    // Not an IP address (a Unix socket, a destroyed socket): as given.
    ['', ''],
    ['unix', 'unix'],
  ];
  for (const [address, group] of cases) {
    it(`counts ${JSON.stringify(address)} as ${JSON.stringify(group)}`, () => {
      assert.equal(addressGroup(address), group);
    });
  }
});

describe("the pipeline's limit of unauthenticated clients", () => {
  const authenticator: Authenticator = {
    authenticate: async () => {
      throw new HttpError(401, 'unauthorized');
    },
  };
  const route: RouteSpec = {
    method: 'GET',
    pattern: '/ping',
    auth: 'public',
    versioned: false,
    doc: { summary: 'ping', success: { status: 200 } },
    handler: async () => new Response('pong'),
  };
  const newApp = () =>
    createApp(
      {
        config: loadConfig({ RATE_LIMIT: '2/60' }),
        db: {} as Database,
        cursorKeys: { keys: [new Uint8Array(32)], reload: async () => {}, stop: () => {} },
        log: createLogger('silent'),
        authenticator,
      },
      [route],
    );
  const statuses = async (app: ReturnType<typeof newApp>, addresses: readonly string[]) => {
    const out: number[] = [];
    for (const remoteAddress of addresses)
      out.push((await app(new Request('http://localhost/ping'), { remoteAddress })).status);
    return out;
  };

  it('counts an IPv6 client by its /64: a new address in the same /64 is no new budget', async () => {
    const app = newApp();
    assert.deepEqual(
      await statuses(app, [
        '2001:db8:1:2::1',
        '2001:db8:1:2::2',
        '2001:db8:1:2:ffff:ffff:ffff:ffff',
        '2001:db8:1:3::1',
      ]),
      [200, 200, 429, 200],
    );
  });

  it('counts an IPv4-mapped IPv6 peer as its IPv4 address, and each IPv4 address apart', async () => {
    const app = newApp();
    assert.deepEqual(
      await statuses(app, ['192.0.2.1', '::ffff:192.0.2.1', '192.0.2.1', '192.0.2.2', '::ffff:192.0.2.3']),
      [200, 200, 429, 200, 200],
    );
  });
});

describe("the pipeline's tables of users and addresses", () => {
  it('a flood from new addresses that fills the address table leaves every user a budget of their own', async () => {
    const authenticator: Authenticator = {
      authenticate: async (header) =>
        ({
          userId: Number(header?.slice('Bearer user'.length)),
          role: 'customer',
          scopes: new Set(['orders:read']),
        }) as unknown as Awaited<ReturnType<Authenticator['authenticate']>>,
    };
    const routes: RouteSpec[] = [
      {
        method: 'GET',
        pattern: '/ping',
        auth: 'public',
        versioned: false,
        doc: { summary: 'ping', success: { status: 200 } },
        handler: async () => new Response('pong'),
      },
      {
        method: 'GET',
        pattern: '/mine',
        auth: 'orders:read',
        versioned: false,
        doc: { summary: 'mine', success: { status: 200 } },
        handler: async () => new Response('mine'),
      },
    ];
    const app = createApp(
      {
        config: loadConfig({ RATE_LIMIT: '2/60' }),
        db: {} as Database,
        cursorKeys: { keys: [new Uint8Array(32)], reload: async () => {}, stop: () => {} },
        log: createLogger('silent'),
        authenticator,
        tuning: { rateLimitMaxKeys: 10 },
      },
      routes,
    );
    // 10 addresses fill the address table; the 11th and later share its overflow window (2 requests).
    const flood: number[] = [];
    for (let i = 1; i <= 14; i++)
      flood.push((await app(new Request('http://localhost/ping'), { remoteAddress: `192.0.2.${i}` })).status);
    assert.deepEqual(flood, [...Array(10).fill(200), 200, 200, 429, 429]);
    // Users new in this window, from one more new address: each has a full budget of their own.
    for (const user of [1, 2, 3]) {
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++)
        statuses.push(
          (
            await app(new Request('http://localhost/mine', { headers: { authorization: `Bearer user${user}` } }), {
              remoteAddress: '198.51.100.7',
            })
          ).status,
        );
      assert.deepEqual(statuses, [200, 200, 429]);
    }
  });
});

describe("the pipeline's decision for a token validated lately", () => {
  type Principal = Awaited<ReturnType<Authenticator['authenticate']>>;
  const principalOf = (header: string | null): Principal =>
    ({
      userId: Number(header?.slice('Bearer user'.length)),
      role: 'customer',
      tokenId: 1,
      scopes: new Set(['orders:read']),
    }) as Principal;
  /** An authenticator that counts its lookups; with `known`, it knows what it has looked up, as its cache does. */
  const authenticatorOf = (withKnown: boolean) => {
    const seen = new Map<string, Principal>();
    let lookups = 0;
    const authenticator: Authenticator = {
      authenticate: async (header) => {
        lookups += 1;
        const principal = principalOf(header);
        seen.set(header ?? '', principal);
        return principal;
      },
      ...(withKnown ? { known: (header: string | null) => seen.get(header ?? '') } : {}),
    };
    return { authenticator, lookups: () => lookups };
  };
  const route = (pattern: string, auth: RouteSpec['auth']): RouteSpec => ({
    method: 'GET',
    pattern,
    auth,
    versioned: false,
    doc: { summary: pattern, success: { status: 200 } },
    handler: async () => new Response('ok'),
  });
  /** Status, RateLimit and WWW-Authenticate of each request, and the user in its log line. */
  const run = async (withKnown: boolean) => {
    const { authenticator, lookups } = authenticatorOf(withKnown);
    const lines: { userId?: number | null }[] = [];
    const app = createApp(
      {
        config: loadConfig({ RATE_LIMIT: '3/60' }),
        db: {} as Database,
        cursorKeys: { keys: [new Uint8Array(32)], reload: async () => {}, stop: () => {} },
        log: createLogger('info', (line) => lines.push(JSON.parse(line))),
        authenticator,
      },
      [route('/mine', 'orders:read'), route('/users', 'users:read')],
    );
    const seen: [number, string | null, string | null, number | null | undefined][] = [];
    for (const [user, path] of [
      [1, '/mine'],
      [1, '/mine'],
      [1, '/users'],
      [1, '/mine'],
      [2, '/users'],
      [2, '/users'],
    ] as const) {
      const request = new Request(`http://localhost${path}`, { headers: { authorization: `Bearer user${user}` } });
      const response = await app(request, { remoteAddress: '192.0.2.1' });
      const ratelimit = response.headers.get('ratelimit')?.replace(/t=\d+/, 't=T') ?? null;
      seen.push([response.status, ratelimit, response.headers.get('www-authenticate'), lines.at(-1)?.userId]);
    }
    return { seen, lookups: lookups() };
  };

  it('counts, refuses and logs it as a token looked up, with no lookup of its own', async () => {
    const known = await run(true);
    const looked = await run(false);
    const scope = 'Bearer error="insufficient_scope", scope="users:read"';
    assert.deepEqual(known.seen, [
      [200, '"default";r=2;t=T', null, 1],
      [200, '"default";r=1;t=T', null, 1],
      [403, '"default";r=0;t=T', scope, 1],
      [429, '"default";r=0;t=T', null, 1],
      [403, '"default";r=2;t=T', scope, 2],
      [403, '"default";r=1;t=T', scope, 2],
    ]);
    assert.deepEqual(looked.seen, known.seen);
    assert.equal(known.lookups, 2, 'one lookup a user, the first');
    assert.equal(looked.lookups, 6);
  });
});
