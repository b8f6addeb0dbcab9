// The ceiling (contract §14 / issue 7): the same response bytes and headers as
// GET /v1/orders/{id}, served from memory by bare node:http. Reads them as
// JSON in argv[2]; prints the port it listens on.
import { createServer } from 'node:http';

const { body, headers } = JSON.parse(process.argv[2]);
const bytes = Buffer.from(body, 'utf8');
const server = createServer((_req, res) => {
  res.writeHead(200, { ...headers, 'content-length': bytes.byteLength });
  res.end(bytes);
});
server.keepAliveTimeout = 5000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
