/**
 * Parallel writers for the scale-out tests (contract §17: an acknowledged write
 * is committed): `loops` clients, each creating orders one after another with
 * a fresh Idempotency-Key (or, with `keyed: false`, none: a transaction of
 * several statements rather than a keyed POST's one) and reading each created
 * order back at once.
 */

export interface WriteLoad {
  /** How many answers of each kind: `POST 201`, `POST 500`, `GET after 201: 404`… */
  readonly counts: Readonly<Record<string, number>>;
  /** The ids of the orders answered 201. */
  readonly created: readonly number[];
}

export async function postThenGet(
  base: string,
  token: string,
  { loops, each, label, keyed = true }: { loops: number; each: number; label: string; keyed?: boolean },
): Promise<WriteLoad> {
  const counts: Record<string, number> = {};
  const created: number[] = [];
  const bump = (key: string) => {
    counts[key] = (counts[key] ?? 0) + 1;
  };
  const headers = { authorization: `Bearer ${token}` };
  const loop = async (n: number) => {
    for (let i = 0; i < each; i++) {
      const posted = await fetch(`${base}/v1/orders`, {
        method: 'POST',
        headers: {
          ...headers,
          'content-type': 'application/json',
          ...(keyed ? { 'idempotency-key': `${label}-${n}-${i}` } : {}),
        },
        body: JSON.stringify({ items: [{ productId: 1, qty: 1 }] }),
      });
      await posted.arrayBuffer();
      bump(`POST ${posted.status}`);
      if (posted.status !== 201) continue;
      const location = posted.headers.get('location') as string;
      created.push(Number(location.slice(location.lastIndexOf('/') + 1)));
      const read = await fetch(new URL(location, base), { headers });
      await read.arrayBuffer();
      bump(`GET after 201: ${read.status}`);
    }
  };
  await Promise.all(Array.from({ length: loops }, (_, n) => loop(n)));
  return { counts, created };
}
