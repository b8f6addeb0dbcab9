/**
 * Webhook target rules (contract §15; src/webhooks/rules.ts) as tables: which
 * addresses are private, and the exact verdict on a target URL. Hosts are IP
 * literals, `localhost` (the hosts file) or a name under `.invalid` (RFC 6761
 * §6.4: never resolves), so no row needs the network.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkTarget, isPrivateAddress, type TargetCheck } from '../../src/webhooks/rules.ts';

/** [name, address, isPrivateAddress()]: true means refused. */
const ADDRESSES: readonly (readonly [string, string, boolean])[] = [
  // IPv4
  ['public (Google DNS)', '8.8.8.8', false],
  ['public (Cloudflare DNS)', '1.1.1.1', false],
  ['public, next to 10/8', '11.0.0.1', false],
  ['"this network" 0/8', '0.0.0.0', true],
  ['private 10/8', '10.1.2.3', true],
  ['shared CGNAT 100.64/10', '100.64.0.1', true],
  ['just below 100.64/10', '100.63.255.255', false],
  ['just above 100.64/10', '100.128.0.0', false],
  ['loopback 127/8', '127.0.0.1', true],
  ['loopback, elsewhere in 127/8', '127.255.0.9', true],
  ['link-local (cloud metadata)', '169.254.169.254', true],
  ['private 172.16/12, first', '172.16.0.1', true],
  ['private 172.16/12, last', '172.31.255.255', true],
  ['just above 172.16/12', '172.32.0.0', false],
  ['IETF protocol assignments 192.0.0/24', '192.0.0.8', true],
  ['TEST-NET-1', '192.0.2.1', true],
  ['deprecated 6to4 relay anycast 192.88.99/24 (N/A: not globally reachable)', '192.88.99.1', true],
  ['private 192.168/16', '192.168.1.1', true],
  ['benchmarking 198.18/15', '198.19.255.1', true],
  ['TEST-NET-2', '198.51.100.1', true],
  ['TEST-NET-3', '203.0.113.1', true],
  ['multicast 224/4', '239.255.255.250', true],
  ['reserved 240/4', '240.0.0.1', true],
  ['broadcast', '255.255.255.255', true],
  // IPv6
  ['public (Cloudflare DNS)', '2606:4700:4700::1111', false],
  ['public (Google DNS) under 2001:4860, outside Teredo 2001::/32', '2001:4860:4860::8888', false],
  ['unspecified', '::', true],
  ['loopback', '::1', true],
  ['IPv4-compatible of a public address (::/96)', '::8.8.8.8', true],
  ['IPv4-mapped loopback, dotted', '::ffff:127.0.0.1', true],
  ['IPv4-mapped, dotted, upper-case', '::FFFF:10.0.0.1', true],
  ['IPv4-mapped public, dotted: ::ffff:0:0/96 is not globally reachable', '::ffff:8.8.8.8', true],
  ['IPv4-mapped public, hex: refused by ::ffff:0:0/96', '::ffff:808:808', true],
  ['IPv4-translated ::ffff:0:0:0/96', '::ffff:0:808:808', true],
  ['NAT64 64:ff9b::/96 of loopback', '64:ff9b::7f00:1', true],
  ['NAT64 64:ff9b::/96 of a public address', '64:ff9b::808:808', true],
  ['local NAT64 64:ff9b:1::/48', '64:ff9b:1::1', true],
  ['discard-only 100::/64', '100::1', true],
  ['Teredo 2001::/32', '2001::1', true],
  ['documentation 2001:db8::/32', '2001:db8::1', true],
  ['6to4 2002::/16 of loopback', '2002:7f00:1::', true],
  ['6to4 2002::/16 of a public address', '2002:808:808::1', true],
  ['unique local fc00::/7, fc', 'fc00::1', true],
  ['unique local fc00::/7, fd', 'fd12:3456::1', true],
  ['link-local fe80::/10', 'fe80::1', true],
  ['link-local, upper-case', 'FE80::1', true],
  ['link-local, top of fe80::/10', 'febf::1', true],
  ['link-local with a zone', 'fe80::1%eth0', true],
  ['site-local fec0::/10 (deprecated)', 'fec0::1', true],
  ['site-local, top of fec0::/10', 'feff::1', true],
  ['multicast ff00::/8', 'ff02::1', true],
  // Not an address: refused, whatever it would resolve to.
  ['a host name', 'localhost', true],
  ['empty', '', true],
  ['short IPv4 form', '127.1', true],
  ['IPv4 with a leading zero', '010.0.0.1', true],
];

const ok = (href: string): TargetCheck => ({ ok: true, href });
const refused = (problem: string): TargetCheck => ({ ok: false, problem });
const NOT_ABSOLUTE = refused('must be an absolute http or https URL');
const NOT_HTTP = refused('must be an http or https URL');
const CREDENTIALS = refused('must not carry credentials');
const TOO_LONG = refused('must be at most 2048 characters');
const PRIVATE = refused(
  'must not point at a private, loopback or link-local address (an operator may allow them with ' +
    'WEBHOOK_ALLOW_PRIVATE=1)',
);

const LONG_PATH = `/${'a'.repeat(2048)}`;

/** [name, URL, WEBHOOK_ALLOW_PRIVATE, checkTarget()]. */
const TARGETS: readonly (readonly [string, string, boolean, TargetCheck])[] = [
  ['https to a public address', 'https://8.8.8.8/hook', false, ok('https://8.8.8.8/hook')],
  ['http to a public address', 'http://8.8.8.8/hook?x=1#f', false, ok('http://8.8.8.8/hook?x=1#f')],
  ['spaces around are trimmed', '  https://8.8.8.8/hook \n', false, ok('https://8.8.8.8/hook')],
  ['the scheme and host are normalized', 'HTTPS://8.8.8.8', false, ok('https://8.8.8.8/')],
  ['the default port is dropped', 'https://8.8.8.8:443/', false, ok('https://8.8.8.8/')],
  ['any port is allowed', 'http://8.8.8.8:8080/', false, ok('http://8.8.8.8:8080/')],
  ['even a port of another protocol (22)', 'http://8.8.8.8:22/', false, ok('http://8.8.8.8:22/')],
  ['a public IPv6 literal', 'http://[2606:4700:4700::1111]/', false, ok('http://[2606:4700:4700::1111]/')],
  ['ftp', 'ftp://8.8.8.8/', false, NOT_HTTP],
  ['file', 'file:///etc/passwd', false, NOT_HTTP],
  ['ws', 'ws://8.8.8.8/', false, NOT_HTTP],
  ['javascript', 'javascript:alert(1)', false, NOT_HTTP],
  ['data', 'data:text/plain,hi', false, NOT_HTTP],
  ['relative', '/hook', false, NOT_ABSOLUTE],
  ['empty', '', false, NOT_ABSOLUTE],
  ['no host', 'http://', false, NOT_ABSOLUTE],
  ['a bad port', 'http://8.8.8.8:99999/', false, NOT_ABSOLUTE],
  ['an IPv6 zone in the host', 'http://[fe80::1%25eth0]/', false, NOT_ABSOLUTE],
  ['user and password', 'https://user:pw@8.8.8.8/', false, CREDENTIALS],
  ['user only', 'https://user@8.8.8.8/', false, CREDENTIALS],
  ['password only', 'https://:pw@8.8.8.8/', false, CREDENTIALS],
  ['credentials, even when private ones are allowed', 'http://u:p@localhost/', true, CREDENTIALS],
  ['2049 characters', `https://8.8.8.8${LONG_PATH}`, false, TOO_LONG],
  ['loopback', 'http://127.0.0.1/', false, PRIVATE],
  ['loopback, short form (parsed as 127.0.0.1)', 'http://127.1/', false, PRIVATE],
  ['loopback, one number', 'http://2130706433/', false, PRIVATE],
  ['loopback, hex and octal parts', 'http://0x7f.0.0.01/', false, PRIVATE],
  ['0 (parsed as 0.0.0.0)', 'http://0/', false, PRIVATE],
  ['private 10/8 with a port', 'http://10.0.0.1:8080/', false, PRIVATE],
  ['cloud metadata', 'http://169.254.169.254/latest/meta-data/', false, PRIVATE],
  ['localhost, resolved from the hosts file', 'http://localhost:3000/hook', false, PRIVATE],
  ['IPv6 loopback', 'http://[::1]/', false, PRIVATE],
  ['IPv4-mapped loopback', 'http://[::ffff:127.0.0.1]/', false, PRIVATE],
  ['IPv4-mapped public (the URL parser writes it as hex)', 'http://[::ffff:8.8.8.8]/', false, PRIVATE],
  ['NAT64', 'http://[64:ff9b::7f00:1]/', false, PRIVATE],
  ['6to4', 'http://[2002:7f00:1::]/', false, PRIVATE],
  ['benchmarking 2001:2::/48', 'http://[2001:2::1]/', false, PRIVATE],
  ['documentation 3fff::/20', 'http://[3fff::1]/', false, PRIVATE],
  ['SRv6 SIDs 5f00::/16', 'http://[5f00::1]/', false, PRIVATE],
  ['deprecated ORCHID 2001:10::/28', 'http://[2001:10::1]/', false, PRIVATE],
  ['Teredo', 'http://[2001::1]/', false, PRIVATE],
  ['unique local', 'http://[fd00::1]/', false, PRIVATE],
  ['link-local', 'http://[fe80::1]/', false, PRIVATE],
  ['site-local', 'http://[fec0::1]/', false, PRIVATE],
  [
    'a name that never resolves',
    'https://hooks.invalid/x',
    false,
    refused('names a host that cannot be resolved (hooks.invalid)'),
  ],
  ['private allowed: loopback', 'http://127.0.0.1:9000/hook', true, ok('http://127.0.0.1:9000/hook')],
  ['private allowed: localhost', 'http://localhost:3000/hook', true, ok('http://localhost:3000/hook')],
  ['private allowed: no lookup at all', 'https://hooks.invalid/x', true, ok('https://hooks.invalid/x')],
  ['private allowed: a name in IDNA form', 'https://bücher.invalid/', true, ok('https://xn--bcher-kva.invalid/')],
  ['private allowed, still http(s) only', 'ftp://localhost/', true, NOT_HTTP],
];

/**
 * The registries block by block (src/webhooks/special-addresses.ts): each block, then its first and last
 * address, and the address just outside each end where it falls in no other block, after ` | `: `-` refused,
 * `+` allowed.
 */
const REGISTRY: readonly string[] = [
  '0.0.0.0/8 | -0.0.0.0 -0.255.255.255 +1.0.0.0',
  '10.0.0.0/8 | -10.0.0.0 -10.255.255.255 +9.255.255.255 +11.0.0.0',
  '100.64.0.0/10 | -100.64.0.0 -100.127.255.255 +100.63.255.255 +100.128.0.0',
  '127.0.0.0/8 | -127.0.0.0 -127.255.255.255 +126.255.255.255 +128.0.0.0',
  '169.254.0.0/16 | -169.254.0.0 -169.254.255.255 +169.253.255.255 +169.255.0.0',
  '172.16.0.0/12 | -172.16.0.0 -172.31.255.255 +172.15.255.255 +172.32.0.0',
  '192.0.0.0/24 | -192.0.0.0 -192.0.0.255 +191.255.255.255 +192.0.1.0',
  '192.0.0.0/29 | -192.0.0.7',
  '192.0.0.8/32 | -192.0.0.8',
  '192.0.0.9/32: globally reachable, inside 192.0.0.0/24 | +192.0.0.9',
  '192.0.0.10/32: globally reachable | +192.0.0.10 -192.0.0.11',
  '192.0.0.170/32, 192.0.0.171/32 | -192.0.0.170 -192.0.0.171',
  '192.0.2.0/24 | -192.0.2.0 -192.0.2.255 +192.0.3.0',
  '192.31.196.0/24: globally reachable | +192.31.196.0 +192.31.196.255',
  '192.52.193.0/24: globally reachable | +192.52.193.0 +192.52.193.255',
  '192.88.99.0/24: N/A | -192.88.99.0 -192.88.99.255 +192.88.98.255 +192.88.100.0',
  '192.88.99.2/32 | -192.88.99.2',
  '192.168.0.0/16 | -192.168.0.0 -192.168.255.255 +192.167.255.255 +192.169.0.0',
  '192.175.48.0/24: globally reachable | +192.175.48.0 +192.175.48.255',
  '198.18.0.0/15 | -198.18.0.0 -198.19.255.255 +198.17.255.255 +198.20.0.0',
  '198.51.100.0/24 | -198.51.100.0 -198.51.100.255 +198.51.99.255 +198.51.101.0',
  '203.0.113.0/24 | -203.0.113.0 -203.0.113.255 +203.0.112.255 +203.0.114.0',
  '240.0.0.0/4 | -240.0.0.0 -255.255.255.254',
  '255.255.255.255/32 | -255.255.255.255',
  'beyond: multicast 224.0.0.0/4 | -224.0.0.0 -239.255.255.255 +223.255.255.255',
  '::1/128, ::/128 | -::1 -::',
  '::ffff:0:0/96 | -::ffff:0:0 -::ffff:ffff:ffff',
  '64:ff9b::/96: globally reachable, refused beyond (a translator): -64:ff9b: | -64:ff9b::ffff:ffff',
  '64:ff9b:1::/48: -64:ff9b:1: | -64:ff9b:1:ffff:ffff:ffff:ffff:ffff',
  '100::/64, 100:0:0:1::/64: -100: | -100:0:0:1:ffff:ffff:ffff:ffff',
  '2001::/23 | -2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff +2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff +2001:200::',
  '2001::/32: N/A: -2001: | -2001:0:ffff:ffff:ffff:ffff:ffff:ffff',
  '2001:1::1-3/128: globally reachable | +2001:1::1 +2001:1::2 +2001:1::3 -2001:1::4',
  '2001:2::/48: -2001:2: | -2001:2:0:ffff:ffff:ffff:ffff:ffff -2001:2:1::',
  '2001:3::/32: globally reachable: +2001:3: | +2001:3:ffff:ffff:ffff:ffff:ffff:ffff',
  '2001:4:112::/48: globally reachable: +2001:4:112: | -2001:4:111:ffff:ffff:ffff:ffff:ffff -2001:4:113::',
  '2001:10::/28: -2001:10: | -2001:1f:ffff:ffff:ffff:ffff:ffff:ffff',
  '2001:20::/28, 2001:30::/28: globally reachable: +2001:20: | +2001:3f:ffff:ffff:ffff:ffff:ffff:ffff -2001:40::',
  '2001:db8::/32: -2001:db8: | -2001:db8:ffff:ffff:ffff:ffff:ffff:ffff +2001:db7:ffff:ffff:ffff:ffff:ffff:ffff',
  '2001:db8::/32: -2001:db8: | +2001:db9::',
  '2002::/16: N/A: -2002: | -2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff +2003::',
  '2620:4f:8000::/48: globally reachable: +2620:4f:8000: | +2620:4f:8000:ffff:ffff:ffff:ffff:ffff',
  '3fff::/20: -3fff: | -3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff +3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff +3fff:1000::',
  '5f00::/16: -5f00: | -5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
  'fc00::/7 | -fc00:: -fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
  'fe80::/10 | -fe80:: -febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
  'beyond: outside 2000::/3 (global unicast) | -1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff -4000::',
  'beyond: inside 2000::/3 (global unicast) | +2000:: +3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
];

for (const row of REGISTRY) {
  const [block, cases] = row.split(' | ') as [string, string];
  test(`isPrivateAddress, the registries: ${block}`, () => {
    const expected = cases.split(' ').map((c) => [c.slice(1), c.startsWith('-')] as const);
    assert.deepEqual(
      expected.map(([address]) => [address, isPrivateAddress(address)]),
      expected,
    );
  });
}

for (const [name, address, expected] of ADDRESSES) {
  test(`isPrivateAddress: ${name} (${JSON.stringify(address)}) → ${expected}`, () => {
    assert.strictEqual(isPrivateAddress(address), expected);
  });
}

for (const [name, url, allowPrivate, expected] of TARGETS) {
  const shown = url.length > 60 ? `${url.slice(0, 40)}…` : url;
  test(`checkTarget: ${name} (${JSON.stringify(shown)}${allowPrivate ? ', private allowed' : ''})`, async () => {
    assert.deepStrictEqual(await checkTarget(url, allowPrivate), expected);
  });
}

test('the 2048-character limit is on the normalized href', async () => {
  const url = `https://8.8.8.8/${'a'.repeat(2048 - 'https://8.8.8.8/'.length)}`;
  assert.deepStrictEqual(await checkTarget(url, false), ok(url));
  assert.strictEqual(url.length, 2048);
});
