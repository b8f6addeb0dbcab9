/**
 * The client's address behind reverse proxies (contract §16, TRUST_PROXY): the
 * pure rules of src/http/client-address.ts, spoofing attempts first, and the
 * pipeline's use of the address for rate limits and the log. The real nginx
 * in front of the real server is test/ops/nginx.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createApp } from '../../src/pipeline/pipeline.ts';
import type { RouteSpec } from '../../src/pipeline/context.ts';
import type { Authenticator } from '../../src/auth/authenticator.ts';
import { loadConfig } from '../../src/config/config.ts';
import type { Database } from '../../src/db/database.ts';
import {
  clientAddress,
  forwardedFor,
  nodeAddress,
  parseProxyEntry,
  trustedProxies,
  type ProxyHeader,
  type ProxyRange,
} from '../../src/http/client-address.ts';
import { HttpError } from '../../src/http/problem.ts';
import { createLogger } from '../../src/base/logger.ts';

const ranges = (...entries: string[]): ProxyRange[] =>
  entries.flatMap((entry) => parseProxyEntry(entry) ?? assert.fail(`bad entry ${entry}`));

describe('parseProxyEntry()', () => {
  const good: [string, ProxyRange[]][] = [
    ['192.0.2.7', [{ network: '192.0.2.7', prefix: 32, family: 'ipv4' }]],
    ['10.0.0.0/8', [{ network: '10.0.0.0', prefix: 8, family: 'ipv4' }]],
    ['0.0.0.0/0', [{ network: '0.0.0.0', prefix: 0, family: 'ipv4' }]],
    ['::1', [{ network: '::1', prefix: 128, family: 'ipv6' }]],
    ['2001:db8::/32', [{ network: '2001:db8::', prefix: 32, family: 'ipv6' }]],
    [
      'loopback',
      [
        { network: '127.0.0.0', prefix: 8, family: 'ipv4' },
        { network: '::1', prefix: 128, family: 'ipv6' },
      ],
    ],
  ];
  for (const [entry, expected] of good) {
    it(`reads ${entry}`, () => {
      assert.deepEqual(parseProxyEntry(entry), expected);
    });
  }
  for (const entry of [
    '',
    'nginx',
    '10.0.0.0/33',
    '10.0.0.0/',
    '10.0.0.0/08',
    '10.0.0.0/-1',
    '2001:db8::/129',
    '[::1]',
    '10.0.0',
    '256.0.0.1',
    'fe80::1%eth0',
    'LOOPBACK',
  ]) {
    it(`refuses ${JSON.stringify(entry)}`, () => {
      assert.equal(parseProxyEntry(entry), undefined);
    });
  }
});

describe('trustedProxies()', () => {
  const trusted = trustedProxies(ranges('10.0.0.0/8', '192.0.2.7', '2001:db8::/32', 'loopback'));
  const cases: [string, boolean][] = [
    ['10.1.2.3', true],
    ['11.0.0.1', false],
    ['192.0.2.7', true],
    ['192.0.2.8', false],
    ['127.0.0.1', true],
    ['127.255.0.9', true],
    ['::1', true],
    ['::ffff:10.9.9.9', true],
    ['::ffff:11.0.0.1', false],
    ['2001:db8:ffff::1', true],
    ['2001:db9::1', false],
    ['', false],
    ['unknown', false],
  ];
  for (const [address, expected] of cases) {
    it(`${expected ? 'trusts' : 'does not trust'} ${JSON.stringify(address)}`, () => {
      assert.equal(trusted(address), expected);
    });
  }
});

describe('nodeAddress()', () => {
  const cases: [string, string | undefined][] = [
    ['192.0.2.43', '192.0.2.43'],
    ['192.0.2.43:47011', '192.0.2.43'],
    ['[2001:db8:cafe::17]', '2001:db8:cafe::17'],
    ['[2001:db8:cafe::17]:4711', '2001:db8:cafe::17'],
    ['[2001:db8:cafe::17]:_port', '2001:db8:cafe::17'],
    ['2001:db8:cafe::17', '2001:db8:cafe::17'],
    ['::ffff:192.0.2.1', '192.0.2.1'],
    ['[::ffff:192.0.2.1]:80', '192.0.2.1'],
    ['unknown', undefined],
    ['_hidden', undefined],
    ['_SEVKISEK', undefined],
    ['[2001:db8::17', undefined],
    ['[192.0.2.43]', undefined],
    ['[2001:db8::17]x', undefined],
    ['192.0.2.43:port', undefined],
    ['192.0.2.43:80:80', undefined],
    ['example.com', undefined],
    ['', undefined],
  ];
  for (const [node, expected] of cases) {
    it(`reads ${JSON.stringify(node)} as ${JSON.stringify(expected)}`, () => {
      assert.equal(nodeAddress(node), expected);
    });
  }
});

describe('forwardedFor()', () => {
  const cases: [string, (string | undefined)[]][] = [
    ['for=192.0.2.60;proto=http;by=203.0.113.43', ['192.0.2.60']],
    ['for="_gazonk"', ['_gazonk']],
    ['For="[2001:db8:cafe::17]:4711"', ['[2001:db8:cafe::17]:4711']],
    ['for=192.0.2.43, for=198.51.100.17', ['192.0.2.43', '198.51.100.17']],
    ['for=192.0.2.43,for="[2001:db8:cafe::17]", for=unknown', ['192.0.2.43', '[2001:db8:cafe::17]', 'unknown']],
    ['proto=https;by=203.0.113.43', [undefined]],
    ['for=192.0.2.43 ; proto=https', ['192.0.2.43']],
    ['proto=https, for=192.0.2.43', [undefined, '192.0.2.43']],
    ['for="a,b;c", for=192.0.2.1', ['a,b;c', '192.0.2.1']],
    ['for="\\"quoted\\""', ['"quoted"']],
    ['for=192.0.2.1;for=192.0.2.2, for=192.0.2.3', [undefined, '192.0.2.3']],
    ['for=192.0.2.1, , for=192.0.2.3', ['192.0.2.1', '192.0.2.3']],
    ['garbage, for=192.0.2.3', [undefined, '192.0.2.3']],
    ['for="unterminated', [undefined]],
    ['for=192.0.2.1 junk', ['192.0.2.1 junk']],
    ['', []],
  ];
  for (const [field, expected] of cases) {
    it(`reads ${JSON.stringify(field)}`, () => {
      assert.deepEqual(forwardedFor(field), expected);
    });
  }
});

describe('clientAddress()', () => {
  const trusted = trustedProxies(ranges('10.0.0.0/8', '2001:db8:ffff::/48'));
  const cases: [string, string, ProxyHeader, string | null, string][] = [
    [
      'a client sending X-Forwarded-For itself is its own address',
      '198.51.100.9',
      'x-forwarded-for',
      '192.0.2.1',
      '198.51.100.9',
    ],
    [
      'a client sending Forwarded itself is its own address',
      '198.51.100.9',
      'forwarded',
      'for=192.0.2.1',
      '198.51.100.9',
    ],
    ['one proxy: the address it forwards', '10.0.0.1', 'forwarded', 'for=192.0.2.60;proto=https', '192.0.2.60'],
    ['one proxy, X-Forwarded-For: the address it forwards', '10.0.0.1', 'x-forwarded-for', '192.0.2.60', '192.0.2.60'],
    [
      'one proxy that appends: the right-most address, not what the client wrote',
      '10.0.0.1',
      'forwarded',
      'for=6.6.6.6, for=192.0.2.60',
      '192.0.2.60',
    ],
    [
      "one proxy appending to X-Forwarded-For: the right-most, not the client's own entry",
      '10.0.0.1',
      'x-forwarded-for',
      '6.6.6.6, 192.0.2.60',
      '192.0.2.60',
    ],
    ['two trusted proxies: past both', '10.0.0.1', 'forwarded', 'for=192.0.2.60, for=10.0.0.2', '192.0.2.60'],
    [
      'a chain with untrusted hops: the right-most untrusted',
      '10.0.0.1',
      'forwarded',
      'for=6.6.6.6, for=198.51.100.1, for=192.0.2.60, for=10.0.0.2',
      '192.0.2.60',
    ],
    [
      'X-Forwarded-For chain with untrusted hops: the right-most untrusted',
      '10.0.0.1',
      'x-forwarded-for',
      '6.6.6.6, 198.51.100.1, 192.0.2.60, 10.0.0.2',
      '192.0.2.60',
    ],
    ['every hop trusted: the left-most', '10.0.0.1', 'x-forwarded-for', '10.0.0.3, 10.0.0.2', '10.0.0.3'],
    [
      'a quoted IPv6 address with a port',
      '10.0.0.1',
      'forwarded',
      'for="[2001:db8:cafe::17]:4711"',
      '2001:db8:cafe::17',
    ],
    ['an IPv6 proxy', '2001:db8:ffff::5', 'forwarded', 'for=192.0.2.60', '192.0.2.60'],
    ['an IPv4-mapped peer', '::ffff:10.0.0.1', 'forwarded', 'for=192.0.2.60', '192.0.2.60'],
    ['a peer not trusted is given unmapped', '::ffff:198.51.100.9', 'x-forwarded-for', null, '198.51.100.9'],
    [
      'for=unknown: the proxy itself, never what lies left of it',
      '10.0.0.1',
      'forwarded',
      'for=6.6.6.6, for=unknown',
      '10.0.0.1',
    ],
    ['an obfuscated identifier: the proxy itself', '10.0.0.1', 'forwarded', 'for=6.6.6.6, for="_hidden"', '10.0.0.1'],
    [
      'a hop with no for: the nearest trusted proxy',
      '10.0.0.1',
      'forwarded',
      'for=6.6.6.6, proto=https, for=10.0.0.2',
      '10.0.0.2',
    ],
    [
      'a malformed entry in X-Forwarded-For: the proxy itself',
      '10.0.0.1',
      'x-forwarded-for',
      '6.6.6.6, not-an-address',
      '10.0.0.1',
    ],
    ['neither field: the proxy itself', '10.0.0.1', 'x-forwarded-for', null, '10.0.0.1'],
    ['empty list entries are skipped', '10.0.0.1', 'x-forwarded-for', '192.0.2.60, ', '192.0.2.60'],
    [
      'a client claiming to be a trusted proxy is its own address',
      '198.51.100.9',
      'x-forwarded-for',
      '10.0.0.1',
      '198.51.100.9',
    ],
    ['Forwarded without any for: the proxy itself', '10.0.0.1', 'forwarded', 'proto=https', '10.0.0.1'],
  ];
  for (const [name, peer, header, field, expected] of cases) {
    it(`${name} (${header}): ${expected}`, () => {
      assert.equal(clientAddress(peer, field, trusted, header), expected);
    });
  }

  it("reads only the field the proxy is configured to write (TRUST_PROXY_HEADER): the other is the client's", () => {
    // Through a proxy that sets X-Forwarded-For and passes a client's Forwarded on untouched.
    const forged = { forwarded: 'for=192.0.2.99', xff: '203.0.113.7' };
    assert.equal(clientAddress('10.0.0.1', forged.xff, trusted, 'x-forwarded-for'), '203.0.113.7');
    assert.equal(clientAddress('10.0.0.1', forged.forwarded, trusted, 'forwarded'), '192.0.2.99');
    assert.equal(clientAddress('10.0.0.1', null, trusted, 'forwarded'), '10.0.0.1');
  });
});

describe('the pipeline with TRUST_PROXY', () => {
  const authenticator: Authenticator = {
    authenticate: async () => {
      throw new HttpError(401, 'unauthorized');
    },
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
  ];
  const setUp = (env: Record<string, string>) => {
    const lines: Record<string, unknown>[] = [];
    const app = createApp(
      {
        config: loadConfig({ RATE_LIMIT: '2/60', ...env }),
        db: {} as Database,
        log: createLogger('info', (line) => lines.push(JSON.parse(line))),
        authenticator,
        cursorKeys: { keys: [new Uint8Array(32)], reload: async () => {}, stop: () => {} },
      },
      routes,
    );
    const get = (remoteAddress: string, headers: Record<string, string> = {}) =>
      app(new Request('http://localhost/ping', { headers }), { remoteAddress });
    return { lines, get };
  };

  it('counts each forwarded client apart, and logs its address', async () => {
    const { lines, get } = setUp({ TRUST_PROXY: '10.0.0.1' });
    const statuses: number[] = [];
    // The client's own Forwarded is not what the proxy writes (X-Forwarded-For): never read.
    for (const client of ['192.0.2.1', '192.0.2.1', '192.0.2.1', '192.0.2.2'])
      statuses.push((await get('10.0.0.1', { 'x-forwarded-for': client, forwarded: 'for=203.0.113.9' })).status);
    assert.deepEqual(statuses, [200, 200, 429, 200]);
    assert.deepEqual(
      lines.map((line) => line.clientAddress),
      ['192.0.2.1', '192.0.2.1', '192.0.2.1', '192.0.2.2'],
    );
  });

  it('believes nothing from a peer that is not a trusted proxy', async () => {
    const { lines, get } = setUp({ TRUST_PROXY: '10.0.0.1' });
    const statuses: number[] = [];
    for (const client of ['192.0.2.1', '192.0.2.2', '192.0.2.3'])
      statuses.push((await get('198.51.100.9', { 'x-forwarded-for': client, forwarded: `for=${client}` })).status);
    assert.deepEqual(statuses, [200, 200, 429]);
    assert.deepEqual(
      lines.map((line) => line.clientAddress),
      ['198.51.100.9', '198.51.100.9', '198.51.100.9'],
    );
  });

  it('ignores the fields altogether when TRUST_PROXY is unset', async () => {
    const { lines, get } = setUp({});
    await get('10.0.0.1', { forwarded: 'for=192.0.2.1', 'x-forwarded-for': '192.0.2.1' });
    assert.equal(lines[0]?.clientAddress, '10.0.0.1');
  });

  it('counts a forwarded IPv6 client by its /64 (TRUST_PROXY_HEADER=forwarded)', async () => {
    const { get } = setUp({ TRUST_PROXY: 'loopback', TRUST_PROXY_HEADER: 'forwarded' });
    const statuses: number[] = [];
    for (const client of ['2001:db8:1:2::1', '2001:db8:1:2::2', '2001:db8:1:2::3', '2001:db8:1:3::1'])
      statuses.push((await get('::1', { forwarded: `for="[${client}]:4711"` })).status);
    assert.deepEqual(statuses, [200, 200, 429, 200]);
  });
});
