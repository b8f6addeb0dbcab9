/**
 * Hosts in network namespaces on this machine, for tests of a topology across
 * machines: each host a namespace of its own, joined to one or more networks
 * (a bridge each, in the test's namespace, which joins them too) by a veth
 * pair. A link set down is a partition: the host keeps running, its packets
 * to that network go nowhere. Needs root and `ip` (iproute2); everything is
 * named after this process, and removed by `close()`.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';

const IP = spawnSync('ip', ['-V']).status === 0 ? 'ip' : '/usr/sbin/ip';

/** Why namespaces cannot be made here, or `false`. */
export const NETNS_MISSING: string | false = (() => {
  if (process.getuid?.() !== 0) return 'needs root (network namespaces)';
  const probe = `orders-probe-${process.pid}`;
  const made = spawnSync(IP, ['netns', 'add', probe]);
  spawnSync(IP, ['netns', 'delete', probe]);
  return made.status === 0 ? false : `ip netns add failed: ${made.stderr.toString().trim()}`;
})();

/** Runs `ip` with `args`; throws with its error output when it fails. */
function ip(...args: string[]): void {
  const done = spawnSync(IP, args);
  if (done.status !== 0) throw new Error(`ip ${args.join(' ')}: ${done.stderr.toString().trim()}`);
}

export interface Network {
  readonly name: string;
  /** The first three bytes of its /24, with the dot: `10.213.0.`. */
  readonly prefix: string;
}

export interface Host {
  readonly name: string;
  /** Its address on `network`. */
  address(network: Network): string;
  /** Spawns `command` inside the host (as `user` when given), its output piped. */
  spawn(
    command: string,
    args: readonly string[],
    options?: { env?: Record<string, string>; user?: string },
  ): ChildProcess;
  /** Runs `command` inside the host to its end. */
  run(
    command: string,
    args: readonly string[],
    options?: { env?: Record<string, string>; user?: string },
  ): {
    status: number | null;
    stdout: string;
    stderr: string;
  };
  /** Sets its link to `network` down (a partition) or up again. */
  cut(network: Network): void;
  heal(network: Network): void;
}

export interface Lab {
  /** A new network, `10.213.<n>.0/24`; this namespace is `.1` on it. */
  network(name: string): Network;
  /** One more address of this namespace's on `network` (`octet`, its last byte): a client of its own. */
  alias(network: Network, octet: number): string;
  /** A new host with `octet` as the last byte of its address on each of `networks`. */
  host(name: string, octet: number, networks: readonly Network[]): Host;
  /** Removes every host and network made. */
  close(): void;
}

export function startLab(): Lab {
  const tag = String(process.pid % 100_000);
  const networks: Network[] = [];
  const bridges: string[] = [];
  const namespaces: string[] = [];
  const lab: Lab = {
    network(name) {
      const network = { name, prefix: `10.213.${networks.length}.` };
      const bridge = `ob${tag}-${networks.length}`;
      ip('link', 'add', bridge, 'type', 'bridge');
      bridges.push(bridge);
      ip('addr', 'add', `${network.prefix}1/24`, 'dev', bridge);
      ip('link', 'set', bridge, 'up');
      networks.push(network);
      return network;
    },
    alias(network, octet) {
      ip('addr', 'add', `${network.prefix}${octet}/24`, 'dev', bridges[networks.indexOf(network)] as string);
      return `${network.prefix}${octet}`;
    },
    host(name, octet, joined) {
      const ns = `orders-${tag}-${name}`;
      ip('netns', 'add', ns);
      namespaces.push(ns);
      ip('-n', ns, 'link', 'set', 'lo', 'up');
      const outside = new Map<Network, string>();
      for (const network of joined) {
        const n = networks.indexOf(network);
        const outer = `o${tag}${name.slice(0, 4)}${n}`;
        const inner = `eth${n}`;
        ip('link', 'add', outer, 'type', 'veth', 'peer', 'name', inner, 'netns', ns);
        ip('link', 'set', outer, 'master', bridges[n] as string, 'up');
        ip('-n', ns, 'addr', 'add', `${network.prefix}${octet}/24`, 'dev', inner);
        ip('-n', ns, 'link', 'set', inner, 'up');
        outside.set(network, outer);
      }
      const wrap = (command: string, args: readonly string[], user?: string): string[] => [
        'netns',
        'exec',
        ns,
        ...(user === undefined ? [] : ['runuser', '-u', user, '--']),
        command,
        ...args,
      ];
      return {
        name,
        address: (network) => `${network.prefix}${octet}`,
        spawn: (command, args, options = {}) =>
          spawn(IP, wrap(command, args, options.user), {
            stdio: ['ignore', 'pipe', 'pipe'],
            env: { ...process.env, ...options.env },
          }),
        run(command, args, options = {}) {
          const done = spawnSync(IP, wrap(command, args, options.user), { env: { ...process.env, ...options.env } });
          return { status: done.status, stdout: done.stdout.toString(), stderr: done.stderr.toString() };
        },
        // The bridge's end, as a switch port goes dark: the host's own link loses its carrier.
        cut: (network) => ip('link', 'set', outside.get(network) as string, 'down'),
        heal: (network) => ip('link', 'set', outside.get(network) as string, 'up'),
      };
    },
    close() {
      // Whatever still runs in a host is killed, as its machine switched off; deleting the namespace removes its
      // veth ends (and their peers on the bridges).
      for (const ns of namespaces.splice(0)) {
        for (const pid of spawnSync(IP, ['netns', 'pids', ns]).stdout.toString().split(/\s+/).filter(Boolean))
          spawnSync('kill', ['-KILL', pid]);
        spawnSync(IP, ['netns', 'delete', ns]);
      }
      for (const bridge of bridges.splice(0)) spawnSync(IP, ['link', 'delete', bridge]);
    },
  };
  return lab;
}
