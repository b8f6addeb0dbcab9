/**
 * Before any load: does each peer answer what the service answers
 * (contract §14)? The GET of one order byte for byte against the service's
 * v1 body; the pending list's rows and exact total (the service's page also
 * carries a `next` cursor the peers do not make); and a POST's body with the
 * values that differ by nature (ids, customer, times) masked. Each
 * difference is a warning, on stderr now and under the table at the end.
 */
export interface BodyCheck {
  peer: string;
  route: string;
  same: boolean;
  detail: string;
  serviceBytes: number;
  peerBytes: number;
}

interface Peer {
  label: string;
  url: string;
}

export interface BodyCheckOptions {
  service: string;
  peers: Peer[];
  orderId: number;
  /** The service's v1 body of `orderId`. */
  sampleBody: string;
  auth: Record<string, string>;
  /** The list's path and query, without the version. */
  list: string;
  /** The POST of scenario 4, when it runs: the service's is one more order, like those of the scenario. */
  post: { body: string; headers: Record<string, string> } | undefined;
}

const bytes = (text: string) => Buffer.byteLength(text);
const clip = (text: string) => (text.length > 300 ? `${text.slice(0, 300)}…` : text);

/** The JSON text with the values that differ between two fresh orders replaced by placeholders. */
const masked = (text: string) =>
  JSON.stringify(JSON.parse(text), (key, value) =>
    ['id', 'orderId', 'customerId'].includes(key) ? 0 : ['createdAt', 'updatedAt'].includes(key) ? 'T' : value,
  );

interface Page {
  data: unknown[];
  meta: { total: number };
}

function compareLists(service: string, peer: string): { same: boolean; detail: string } {
  const a = JSON.parse(service) as Page;
  const b = JSON.parse(peer) as Page;
  const rows = a.data.map((row) => JSON.stringify(row));
  const other = b.data.map((row) => JSON.stringify(row));
  const first = rows.findIndex((row, i) => row !== other[i]);
  const problems = [
    ...(rows.length !== other.length ? [`${other.length} rows against the service's ${rows.length}`] : []),
    ...(first >= 0 ? [`row ${first} differs: service ${clip(rows[first]!)} / peer ${clip(other[first] ?? '')}`] : []),
    ...(a.meta.total !== b.meta.total ? [`total ${b.meta.total} against the service's ${a.meta.total}`] : []),
  ];
  return problems.length === 0
    ? {
        same: true,
        detail: `the same ${rows.length} rows and total ${a.meta.total} (the service's meta adds a next cursor)`,
      }
    : { same: false, detail: problems.join('; ') };
}

/** One POST to the service and to each peer, each with a fresh key, compared with the values of nature masked. */
async function checkPosts(
  service: string,
  peers: Peer[],
  post: { body: string; headers: Record<string, string> },
): Promise<BodyCheck[]> {
  const send = async (url: string, headers: Record<string, string>) => {
    const key = `bench-check-${process.pid}-${Date.now()}`;
    const answer = await fetch(url, {
      method: 'POST',
      headers: { ...headers, 'idempotency-key': key },
      body: post.body,
    });
    return { status: answer.status, text: await answer.text() };
  };
  const own = await send(`${service}/v1/orders`, post.headers);
  const checks: BodyCheck[] = [];
  for (const peer of peers) {
    const other = await send(`${peer.url}/orders`, { 'content-type': 'application/json' });
    const same = other.status === own.status && masked(other.text) === masked(own.text);
    checks.push({
      peer: peer.label,
      route: 'POST /orders',
      same,
      detail: same
        ? `the same shape and values (ids, customer and times aside), ${other.status}`
        : `the body differs from the service's (ids, customer and times masked):\n  service: ${own.status} ` +
          `${own.text}\n  peer:    ${other.status} ${other.text}`,
      serviceBytes: bytes(own.text),
      peerBytes: bytes(other.text),
    });
  }
  return checks;
}

export async function checkBodies(options: BodyCheckOptions): Promise<BodyCheck[]> {
  const { service, peers, orderId, sampleBody, auth, list, post } = options;
  if (peers.length === 0) return [];
  const checks: BodyCheck[] = [];
  // The reads first: the POST adds a pending order to the top of the list.
  const serviceList = await (await fetch(`${service}/v1${list}`, { headers: auth })).text();
  for (const peer of peers) {
    const get = await (await fetch(`${peer.url}/orders/${orderId}`)).text();
    checks.push({
      peer: peer.label,
      route: 'GET /orders/{id}',
      same: get === sampleBody,
      detail:
        get === sampleBody
          ? `the same ${bytes(get)} bytes`
          : `the body differs from the service's v1 body:\n  service: ${sampleBody}\n  peer:    ${get}`,
      serviceBytes: bytes(sampleBody),
      peerBytes: bytes(get),
    });
    const page = await (await fetch(`${peer.url}${list}`)).text();
    checks.push({
      peer: peer.label,
      route: `GET ${list}`,
      ...compareLists(serviceList, page),
      serviceBytes: bytes(serviceList),
      peerBytes: bytes(page),
    });
  }
  if (post !== undefined) checks.push(...(await checkPosts(service, peers, post)));
  for (const c of checks)
    process.stderr.write(`bench: ${c.same ? 'body check' : 'warning'}: ${c.peer}, ${c.route}: ${c.detail}\n`);
  return checks;
}
