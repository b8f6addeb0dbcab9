/**
 * What answers at `DATABASE_URL`'s address when start-up's attempts fail
 * without a refusal (contract §1, `DATABASE_WAIT`): PostgreSQL's first
 * message, an SSLRequest, is sent on a connection of its own, and the answer
 * says what the peer is. A server or a pooler answers one byte, `S` or `N`
 * (or an `E` error); anything else is not PostgreSQL (an HTTP server answers
 * `HTTP/1.1 400`); silence is named too. The probe sends nothing more and
 * closes its connection.
 */
import { connect } from 'node:net';

export interface Peer {
  readonly host: string;
  readonly port: number;
}

/** PostgreSQL's SSLRequest: length 8, then the code 80877103 (protocol, "SSLRequest"). */
const SSL_REQUEST = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);

/**
 * The first host of a `postgres://` URL (of several, libpq's form), or `undefined` without one (the embedded
 * database, `memory:`, a socket or `PGHOST`).
 *
 * @example
 * firstPeer('postgres://u:p@db1:6432,db2/orders'); // { host: 'db1', port: 6432 }
 */
export function firstPeer(url: string | undefined): Peer | undefined {
  if (url === undefined || !url.includes('://')) return undefined;
  const authority = url.slice(url.indexOf('://') + 3).split(/[/?#]/, 1)[0] as string;
  const first = authority.slice(authority.lastIndexOf('@') + 1).split(',')[0] as string;
  try {
    const parsed = new URL(`postgres://${first}`);
    if (parsed.hostname === '') return undefined;
    return { host: parsed.hostname.replace(/^\[|\]$/g, ''), port: Number(parsed.port || 5432) };
  } catch {
    return undefined;
  }
}

/** One line saying what `peer` is, from its answer to an SSLRequest within `ms`. */
export function identifyPeer(peer: Peer, ms: number): Promise<string> {
  const where = `${peer.host.includes(':') ? `[${peer.host}]` : peer.host}:${peer.port}`;
  return new Promise((resolve) => {
    const socket = connect(peer.port, peer.host);
    let settled = false;
    const done = (what: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(what);
    };
    const timer = setTimeout(
      () => done(`${where} answered nothing to PostgreSQL's first message within ${ms} ms: is it PostgreSQL?`),
      ms,
    );
    socket.once('connect', () => socket.write(SSL_REQUEST));
    socket.once('data', (data: Buffer) => {
      const first = data[0];
      if (first === 0x53 || first === 0x4e || first === 0x45)
        done(`${where} speaks PostgreSQL but did not let the login finish (a pooler waiting for its server?)`);
      else done(`${where} is not PostgreSQL: it answered ${JSON.stringify(printable(data))}`);
    });
    socket.once('error', (error) => done(`${where}: ${error.message}`));
    socket.once('close', () => done(`${where} closed the connection at PostgreSQL's first message`));
  });
}

/** The first bytes of a peer's answer as text: runs of what is not printable ASCII become one space. */
function printable(data: Buffer): string {
  return data
    .toString('latin1', 0, 40)
    .replace(/[^\x20-\x7e]+/g, ' ')
    .trim();
}
