/**
 * The least a Node.js proxy can do: a `node:http` server that forwards each request to the
 * upstream given as its argument through undici's `dispatch` and streams the answer back, with
 * no routing, parsing, policy or log. Started as its own process by `spawnNodeProxy`, it shows
 * how much of the gateway's cost is Node's HTTP server and undici rather than the gateway;
 * prints its URL on stdout. A second argument above 1 runs that many `node:cluster` workers on
 * one port, as `gateway serve --workers` does, so that the gateway's worker rows have a floor
 * on the same number of processes.
 */
import cluster from 'node:cluster';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { type Dispatcher, Pool } from 'undici';
import { listenOnLoopback } from './loopback.js';

const upstream = new URL(process.argv[2] as string);
const workers = Number(process.argv[3] ?? 1);
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'host']);

class Relay implements Dispatcher.DispatchHandler {
  private held: Buffer | undefined = undefined;

  constructor(private readonly response: ServerResponse) {}

  // undici takes a handler for its current (controller-based) API by this method.
  onRequestStart(): void {}

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    const out: IncomingHttpHeaders = {};
    for (const name in headers) if (!HOP_BY_HOP.has(name)) out[name] = headers[name];
    this.response.writeHead(statusCode, out);
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.held) this.response.write(this.held);
    this.held = chunk;
  }

  onResponseEnd(): void {
    this.response.end(this.held);
  }

  onResponseError(): void {
    this.response.destroy();
  }
}

function serve(): Promise<string> {
  const pool = new Pool(upstream.origin, { connections: 128, keepAliveTimeout: 30_000 });
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.once('end', () => {
      const headers: Record<string, string | string[]> = {};
      for (const name in request.headers) {
        const value = request.headers[name];
        if (value !== undefined && !HOP_BY_HOP.has(name) && name !== 'content-length') {
          headers[name] = value;
        }
      }
      pool.dispatch(
        {
          path: upstream.pathname,
          method: request.method as Dispatcher.HttpMethod,
          headers,
          body: Buffer.concat(chunks),
        },
        new Relay(response),
      );
    });
  });
  server.keepAliveTimeout = 75_000;
  return listenOnLoopback(server, '/mcp');
}

if (workers > 1 && cluster.isPrimary) {
  const forked = Array.from({ length: workers }, () => cluster.fork());
  const urls = await Promise.all(forked.map(async (worker) => (await once(worker, 'message'))[0]));
  console.log(urls[0]);
  process.once('SIGTERM', async () => {
    const exits = forked.map((worker) => once(worker, 'exit'));
    for (const worker of forked) worker.kill('SIGTERM');
    await Promise.all(exits);
    process.exit(0);
  });
} else if (cluster.isWorker) {
  process.send?.(await serve());
} else {
  console.log(await serve());
}
