/**
 * The benchmarks' fast upstream: a minimal node:http server answering every request with one
 * fixed `tools/call` result, so what is measured is whatever sits in front of it. Started as its
 * own process by `spawnFastUpstream`; prints its URL on stdout.
 */
import { createServer } from 'node:http';
import { TOOL_RESULT_BODY } from './fast-upstream.js';
import { listenOnLoopback } from './loopback.js';

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
console.log(await listenOnLoopback(server, '/mcp'));
