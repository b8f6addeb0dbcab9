/**
 * Webhook target rules (contract §15; src/webhooks/targets.ts) as tables: which
 * addresses are private, and the exact verdict on a target URL. Hosts are IP
 * literals, `localhost` (the hosts file) or a name under `.invalid` (RFC 6761
 * §6.4: never resolves), so no row needs the network.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkTarget, isPrivateAddress, type TargetCheck } from '../src/webhooks/targets.ts';

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
  ['6to4 relay anycast 192.88.99/24 (not listed)', '192.88.99.1', false],
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
  ['IPv4-mapped public, dotted: checked as the IPv4 address', '::ffff:8.8.8.8', false],
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
const PRIVATE = refused('must not point at a private, loopback or link-local address');

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
