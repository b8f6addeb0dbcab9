/**
 * The connection caps of contract §11, by default from the process's limit on open files (read at start): every
 * connection takes one, as do the pools, Redis, the embedded database's files and the standard streams, so the cap
 * leaves a margin. One client address may hold a 32nd of the cap (4 to 64), so that no handful of addresses fills
 * the process and `/healthz` keeps answering the others.
 */
import { readFileSync } from 'node:fs';
import { ConfigError, integer, type Env } from './values.ts';

/** The limit assumed where /proc cannot be read (not Linux): the usual soft limit of a shell. */
export const ASSUMED_FILE_DESCRIPTORS = 1024;
/** The most connections one client address may hold by default, however large the cap, and the fewest. */
export const MAX_PER_ADDRESS_DEFAULT = 64;
export const MIN_PER_ADDRESS_DEFAULT = 4;
/** By default one client address holds this fraction of the cap. */
export const ADDRESSES_TO_FILL = 32;

/** The caps, as the configuration holds them. */
export interface ConnectionLimits {
  /** `MAX_CONNECTIONS`: connections open at once; more are closed as they arrive. */
  readonly maxConnections: number;
  /** `MAX_CONNECTIONS_PER_ADDRESS`: connections one client address (an IPv6 /64) may hold at once. */
  readonly maxConnectionsPerAddress: number;
  /** The process's soft limit on open files the default was made from (`undefined`: not read, 1024 assumed). */
  readonly fileDescriptors: number | undefined;
}

/** This process's soft limit on open files (`ulimit -n`); `undefined` if /proc cannot tell, or it is unlimited. */
export function fileDescriptorLimit(limits = '/proc/self/limits'): number | undefined {
  let text: string;
  try {
    text = readFileSync(limits, 'utf8');
  } catch {
    return undefined;
  }
  const soft = /^Max open files\s+(\d+)\s/m.exec(text)?.[1];
  return soft === undefined ? undefined : Number(soft);
}

/** The default cap for `fileDescriptors` open files: a quarter, at least 64, is kept for what is not a connection. */
export function defaultMaxConnections(fileDescriptors: number): number {
  return Math.max(1, fileDescriptors - Math.max(64, Math.floor(fileDescriptors / 4)));
}

/** The caps of `env`, with their defaults from `fileDescriptors` (`fileDescriptorLimit()`). */
export function connectionLimits(env: Env, fileDescriptors: number | undefined): ConnectionLimits {
  const maxConnections = integer(
    env,
    'MAX_CONNECTIONS',
    defaultMaxConnections(fileDescriptors ?? ASSUMED_FILE_DESCRIPTORS),
    1,
    1_000_000,
  );
  const perAddress = integer(
    env,
    'MAX_CONNECTIONS_PER_ADDRESS',
    Math.min(
      maxConnections,
      Math.max(
        MIN_PER_ADDRESS_DEFAULT,
        Math.min(MAX_PER_ADDRESS_DEFAULT, Math.floor(maxConnections / ADDRESSES_TO_FILL)),
      ),
    ),
    1,
    1_000_000,
  );
  if (perAddress > maxConnections)
    throw new ConfigError(
      `MAX_CONNECTIONS_PER_ADDRESS (${perAddress}) must not be above MAX_CONNECTIONS (${maxConnections})`,
    );
  return { maxConnections, maxConnectionsPerAddress: perAddress, fileDescriptors };
}
