// The database across a network, for `make bench` (BENCH_LATENCY_MS, issue 35
// item 5): a TCP proxy in front of PostgreSQL that holds every chunk it
// forwards for a set time, each way, in order, as a link with that one-way
// delay does. It counts, per direction, the bursts it forwards (a burst: the
// chunks that arrive while nothing is waiting to go), so that the bench can
// print the round trips a request costs, and measures its own added round
// trip with a small echo exchange through it.
//
// Run as a process of its own, so that its work is not charged to the
// service or a peer: `node bench/latency-proxy.mjs HOST PORT DELAY_MS`
// prints `PORT\n` once listening, then answers each SIGUSR2 with one JSON
// line: { toServer, toClient } (bursts forwarded so far).
import { createConnection, createServer } from 'node:net';

const [host, port, delayArg] = process.argv.slice(2);
const delay = Number(delayArg);
if (host === undefined || port === undefined || !(delay >= 0)) {
  process.stderr.write('usage: node bench/latency-proxy.mjs HOST PORT DELAY_MS\n');
  process.exit(2);
}

const counts = { toServer: 0, toClient: 0 };

/**
 * Forwards what `from` sends to `to`, each chunk `delay` ms after it came, in order. A chunk that arrives
 * while none is waiting starts a burst.
 */
function delayed(from, to, direction) {
  const waiting = [];
  let scheduled = false;
  const drain = () => {
    const now = performance.now();
    while (waiting.length > 0 && waiting[0].at <= now) to.write(waiting.shift().chunk);
    scheduled = waiting.length > 0;
    if (scheduled) setTimeout(drain, Math.max(0, waiting[0].at - now));
  };
  from.on('data', (chunk) => {
    if (waiting.length === 0) counts[direction] += 1;
    waiting.push({ chunk, at: performance.now() + delay });
    if (!scheduled) {
      scheduled = true;
      setTimeout(drain, delay);
    }
  });
  from.on('end', () => {
    const end = () => (waiting.length > 0 ? setTimeout(end, delay) : to.end());
    end();
  });
}

const server = createServer((client) => {
  client.setNoDelay(true);
  const upstream = createConnection(Number(port), host);
  upstream.setNoDelay(true);
  for (const s of [client, upstream]) {
    s.on('error', () => {
      client.destroy();
      upstream.destroy();
    });
  }
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => client.destroy());
  delayed(client, upstream, 'toServer');
  delayed(upstream, client, 'toClient');
});

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${server.address().port}\n`);
});

process.on('SIGUSR2', () => {
  process.stdout.write(`${JSON.stringify(counts)}\n`);
});
