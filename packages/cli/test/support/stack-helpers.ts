import { createServer, type Server } from 'node:net';
import { Writable } from 'node:stream';
import { fetch } from 'undici';
import { createProgress } from '../../src/progress.js';
import { trustingAgent } from '../../src/stack/clients.js';
import type { StackLayout, StackPorts } from '../../src/stack/layout.js';
import type { StackSecrets } from '../../src/stack/secrets.js';
import { type RunningStack, type StackOptions, startStack } from '../../src/stack/start.js';

/**
 * Six distinct free loopback ports for one stack. All listeners are open at
 * once, so the operating system cannot hand the same port out twice.
 */
export async function freeStackPorts(): Promise<StackPorts> {
  const servers: Server[] = [];
  const ports: number[] = [];
  try {
    for (let i = 0; i < 6; i++) {
      const server = createServer();
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      ports.push((server.address() as { port: number }).port);
    }
  } finally {
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  }
  const [idp, mcp, gatewayHttps, gatewayHttp, gatewayManagement, areaA] = ports as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  return { idp, mcp, gatewayHttps, gatewayHttp, gatewayManagement, areaA };
}

/** A writable stream that keeps what was written, for a command's stdout and stderr. */
export function captureStream(): { stream: Writable; text(): string } {
  const chunks: Buffer[] = [];
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      chunks.push(Buffer.from(chunk));
      callback();
    },
  });
  return { stream, text: () => Buffer.concat(chunks).toString('utf8') };
}

/**
 * `up`'s whole stack in `dataDir` on free ports, its progress output kept out of the test's;
 * `options` as `startStack` takes them.
 */
export async function startQuietStack(
  dataDir: string,
  options: Pick<StackOptions, 'clientMetadataAllowPrivateAddresses' | 'delegation'> = {},
): Promise<RunningStack> {
  return startStack({
    ...options,
    dataDir,
    ports: await freeStackPorts(),
    progress: createProgress(captureStream().stream),
    startTimeoutMs: 60_000,
  });
}

/**
 * One raw MCP POST to the gateway, outside the SDK client, so a test can see
 * the HTTP status and the JSON-RPC body the SDK would turn into an exception.
 * `headers` are sent besides the MCP ones (a `traceparent`, say), `meta` as the call's
 * `params._meta`.
 */
export async function rawGatewayToolCall(
  layout: StackLayout,
  accessToken: string,
  id: string,
  tool: string,
  args: Record<string, unknown>,
  extra: { headers?: Record<string, string>; meta?: Record<string, unknown> } = {},
): Promise<{ status: number; contentType: string | null; body: unknown }> {
  const dispatcher = trustingAgent(layout.caFile);
  try {
    const response = await fetch(layout.gateway.mcpUrl, {
      method: 'POST',
      dispatcher,
      headers: {
        ...extra.headers,
        authorization: `Bearer ${accessToken}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name: tool, arguments: args, ...(extra.meta && { _meta: extra.meta }) },
      }),
    });
    return {
      status: response.status,
      contentType: response.headers.get('content-type'),
      body: await response.json(),
    };
  } finally {
    await dispatcher.close();
  }
}

/** GET on the gateway's management API as the stack's administrator. */
export async function managementGet(
  layout: StackLayout,
  secrets: StackSecrets,
  path: string,
): Promise<{ status: number; body: unknown }> {
  const { username, password } = secrets.gatewayAdmin;
  const response = await fetch(`${layout.gateway.managementUrl}/api/management/v1${path}`, {
    headers: {
      authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`,
      accept: 'application/json',
    },
  });
  return { status: response.status, body: await response.json() };
}

/** GET on a URL of the gateway's HTTPS listener, trusting its self-signed certificate. */
export async function gatewayGet(
  layout: StackLayout,
  url: string,
): Promise<{ status: number; body: unknown }> {
  const dispatcher = trustingAgent(layout.caFile);
  try {
    const response = await fetch(url, { dispatcher });
    return { status: response.status, body: await response.json() };
  } finally {
    await dispatcher.close();
  }
}

/** Fixed ports of a stack layout the wiring tests only write files for (nothing listens). */
export const WIRING_PORTS = {
  idp: 14443,
  mcp: 15000,
  gatewayHttps: 18443,
  gatewayHttp: 18080,
  gatewayManagement: 19090,
  areaA: 17000,
};
