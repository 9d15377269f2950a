import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FixedUpstream {
  /** `http://127.0.0.1:<port>/mcp` */
  mcpUrl: string;
  /** Requests answered so far. */
  hits(): number;
  close(): Promise<void>;
}

/**
 * The cheapest possible MCP server: every POST is answered with one fixed tools/call result
 * carrying the request's id, so that whatever sits in front of it is what gets measured.
 */
export async function startFixedUpstream(): Promise<FixedUpstream> {
  let hits = 0;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      hits += 1;
      let id: unknown = null;
      try {
        id = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: unknown }).id ?? null;
      } catch {
        // not JSON: answer with a null id, as JSON-RPC does for unreadable requests
      }
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id,
        result: { content: [{ type: 'text', text: 'ok' }], isError: false },
      });
      response.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
      });
      response.end(body);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    mcpUrl: `http://127.0.0.1:${port}/mcp`,
    hits: () => hits,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
