/**
 * The benchmarks' fast upstream: a minimal node:http server answering every request with one
 * fixed `tools/call` result, so what is measured is whatever sits in front of it. Started as its
 * own process by `spawnFastUpstream`; prints its URL on stdout.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TOOL_RESULT_BODY } from './fast-upstream.js';

const body = Buffer.from(TOOL_RESULT_BODY);
const server = createServer((request, response) => {
  request.resume();
  request.once('end', () => {
    response.writeHead(200, {
      'content-type': 'application/json',
      'content-length': body.length,
    });
    response.end(body);
  });
});
server.keepAliveTimeout = 75_000;
server.listen(0, '127.0.0.1');
await once(server, 'listening');
console.log(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
process.once('SIGTERM', () => server.close(() => process.exit(0)));
