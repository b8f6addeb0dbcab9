/**
 * What answers at `DATABASE_URL`'s address when start-up's attempts fail without a refusal: an SSLRequest, on a
 * connection of its own, is answered `S`, `N` (or an `E` error) by a server or a pooler, and by anything else with
 * something else (an HTTP server: `HTTP/1.1 400`).
 */
import { connect } from 'node:net';

export interface Peer {
  readonly host: string;
  readonly port: number;
}

/** PostgreSQL's SSLRequest: length 8, then the code 80877103 (protocol, "SSLRequest"). */
const SSL_REQUEST = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);

/** The first host of a `postgres://` URL (libpq's `db1:6432,db2` form too), or `undefined` when it names none. */
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

/** One line saying what `peer` is. */
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

function printable(data: Buffer): string {
  return data
    .toString('latin1', 0, 40)
    .replace(/[^\x20-\x7e]+/g, ' ')
    .trim();
}
