/**
 * What the node bridge does with connections beyond one request (contract §11): the caps on how many are open, in
 * the process and per client address; how far a pipelining client may run ahead of its answers; and how one whose
 * request body was left unread ends after its answer.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { addressGroup } from './rate-limit.ts';

export interface ConnectionCaps {
  /**
   * Connections open at once. Past it, the oldest idle keep-alive connection is closed to make room; with none
   * idle, a new one goes into a reserve of `HEALTH_RESERVE` for health checks only; past that, it is closed.
   */
  readonly maxConnections?: number;
  /** Connections one client address (an IPv6 /64, `addressGroup()`) may hold at once. */
  readonly maxConnectionsPerAddress?: number;
  /** Addresses the per-address cap does not apply to: trusted proxies, whose connections carry many clients. */
  readonly sharedAddress?: (address: string) => boolean;
  /** Told of each connection closed as it arrived, past the process's cap or its address's. */
  readonly onRefused?: (cap: 'process' | 'address') => void;
}

/** Connections past `maxConnections` kept for health checks (`/healthz`, `/readyz`). */
export const HEALTH_RESERVE = 16;

/** What the caps need of the server: closing its oldest idle keep-alive connection (`false`: none is idle). */
export interface IdleConnections {
  closeOldest(): boolean;
}

/** The time a connection has to send a whole request head. */
export const HEADERS_TIMEOUT_MS = 10_000;
/** How long a connection may stay idle between two requests. */
export const KEEP_ALIVE_TIMEOUT_MS = 5_000;

/** The largest unread body (`Content-Length`) of a refused request that is drained to keep its connection. */
export const DRAIN_MAX_BYTES = 65_536;

/** How a connection was admitted: in full, or into the reserve for health checks. */
export type Admission = 'full' | 'health' | false;

/**
 * Puts `caps` on `server`; the function returned admits a new connection (in full, or for health checks only), or
 * closes it (`false`) when its address holds its share already.
 */
export function capConnections(
  server: Server,
  caps: ConnectionCaps,
  idle: IdleConnections,
): (socket: Socket) => Admission {
  if (caps.maxConnections !== undefined) server.maxConnections = caps.maxConnections + HEALTH_RESERVE;
  server.on('drop', () => caps.onRefused?.('process'));
  const cap = caps.maxConnectionsPerAddress ?? Infinity;
  const most = caps.maxConnections ?? Infinity;
  const held = new Map<string, number>();
  let open = 0;
  const counted = (socket: Socket): Admission => {
    open += 1;
    socket.once('close', () => {
      open -= 1;
    });
    if (open <= most || idle.closeOldest()) return 'full';
    caps.onRefused?.('process');
    return 'health';
  };
  return (socket) => {
    const address = socket.remoteAddress ?? '';
    if (cap === Infinity || caps.sharedAddress?.(address) === true) return counted(socket);
    const group = addressGroup(address);
    const count = held.get(group) ?? 0;
    if (count >= cap) {
      caps.onRefused?.('address');
      socket.destroy();
      return false;
    }
    held.set(group, count + 1);
    socket.once('close', () => {
      const left = (held.get(group) ?? 1) - 1;
      if (left === 0) held.delete(group);
      else held.set(group, left);
    });
    return counted(socket);
  };
}

/**
 * How long a connection ended with its body unread lingers after its answer, and how much of what the client still
 * sends is read and dropped meanwhile; past that, reading stops (no CPU per byte, whatever a client sends).
 */
export const LINGER_MS = 2_000;
export const LINGER_BYTES = 65_536;

/**
 * Ends `socket` after its answer as a lingering close does (RFC 9112 §9.6): closed at once, a socket with unread
 * data sends a reset, and a client still sending its body may lose the answer. Replaces node's `destroySoon()`,
 * by which it ends a connection whose answer says `Connection: close`.
 */
export function lingeringClose(socket: Socket, lingerMs: number): void {
  socket.destroySoon = () => {
    let dropped = 0;
    const done = () => socket.destroy();
    const timer = setTimeout(done, lingerMs);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
    socket.once('end', done);
    // node's HTTP parser no longer sees what follows: its own 'data' listener goes, and adding this one takes the
    // socket back from the parser's direct reading.
    socket.removeAllListeners('data');
    socket.on('data', (chunk: Buffer) => {
      dropped += chunk.byteLength;
      if (dropped > LINGER_BYTES) socket.pause();
    });
    socket.end();
    // The body's backpressure, or the parser's pause, stopped the handle's reading beneath the stream (which still
    // says it flows): start it again as node's own HTTP server does (_http_server.js, onSocketResume).
    const handle = (socket as unknown as { _handle?: { reading: boolean; readStart(): number } | null })._handle;
    if (handle != null && !handle.reading) {
      handle.reading = true;
      handle.readStart();
    }
    socket.resume();
  };
}

/** Whether what is left of `req`'s body is small enough to read and drop (node does, once the answer is sent). */
export function drainable(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] === undefined && length !== undefined && Number(length) <= DRAIN_MAX_BYTES;
}

/** The most requests a connection may have waiting for their answers (pipelined) at once. */
export const MAX_PIPELINED = 64;

/** How much of an answer may stay unwritten when the connection's next request starts. */
export const PIPELINE_BUDGET = 64 * 1024;

/**
 * Resolves once at most `PIPELINE_BUDGET` bytes of `res` are left to hand to the system, or it is done or gone;
 * `undefined` when that is so already (nearly always: no promise to make and adopt).
 */
function written(res: ServerResponse): Promise<void> | undefined {
  if (res.writableFinished || res.destroyed || res.writableLength <= PIPELINE_BUDGET) return undefined;
  return new Promise((resolve) => {
    const check = () => {
      if (!(res.writableFinished || res.destroyed || res.writableLength <= PIPELINE_BUDGET)) return;
      res.socket?.off('drain', check);
      res.off('finish', check);
      res.off('close', check);
      resolve();
    };
    // The socket's drain: the OutgoingMessage passes it on only to a writer that saw write() refuse.
    res.socket?.on('drain', check);
    res.once('finish', check);
    res.once('close', check);
  });
}

/**
 * Runs a connection's requests in turn: a pipelined one starts once the answer before it is written down to
 * `PIPELINE_BUDGET`, the connection unread meanwhile, so a client that never reads costs one read's worth at most.
 */
export function pipelineTurns(): (socket: Socket, res: ServerResponse, run: () => Promise<void>) => void {
  const turns = new WeakMap<Socket, Promise<void>>();
  return (socket, res, run) => {
    const previous = turns.get(socket);
    let turn: Promise<void>;
    if (previous === undefined) {
      turn = run().then(() => written(res));
    } else {
      socket.pause();
      turn = previous.then(() => {
        socket.resume();
        return run().then(() => written(res));
      });
    }
    turns.set(socket, turn);
    turn.then(() => {
      if (turns.get(socket) === turn) turns.delete(socket);
    });
  };
}
