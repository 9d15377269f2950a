import { request } from 'node:http';
import { useTempDir } from '@mcp-identity/common/testing';
import { describe, expect, it } from 'vitest';
import { ADMIN, basic, proxyDefinition, startTestGateway } from './fixtures/gateway.js';
import { CLIENT_ID } from './fixtures/key-manager.js';
import { toolCall } from './fixtures/mcp-client.js';
import { useProxyStack } from './fixtures/proxy-stack.js';

const tempDir = useTempDir('gw-route-security-');

/** Sends a path byte for byte (fetch() would normalise dot segments and double slashes). */
function send(
  base: string,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
) {
  const { hostname, port } = new URL(base);
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request({
      host: hostname,
      port,
      path,
      method: options.method ?? 'GET',
      headers: options.headers,
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => {
        body += chunk.toString('utf8');
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

const MCP_HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
};

describe('every authorization decision is taken on the route that serves the request', () => {
  // A guarded proxy, and an open one whose context is a prefix-like neighbour.
  const stack = useProxyStack({
    dataDir: tempDir,
    proxies: ({ mcpUrl }) => [
      proxyDefinition('scim-v1.0', '/scim', mcpUrl, [
        { name: 'mcp-auth', version: 'v1', params: { audiences: [CLIENT_ID] } },
      ]),
      proxyDefinition('open-v1.0', '/open', mcpUrl),
    ],
  });

  it('never reaches the guarded upstream without a token, whatever the spelling of the path', async () => {
    const body = JSON.stringify(toolCall('delete_user'));
    const spellings = [
      '/scim/mcp',
      '/scim/mcp/',
      '/scim/mcp//',
      '/scim/mcp?x=1',
      '/%73cim/mcp',
      '/scim/%6dcp',
      '/scim%2Fmcp',
      '/scim%2fmcp',
      '//scim/mcp',
      '/./scim/mcp',
      '/scim/./mcp',
      '/open/../scim/mcp',
      '/open/%2e%2e/scim/mcp',
      '/SCIM/mcp',
      '/scim/MCP',
      '/scim/mcp%00',
      '/scim/mcp;x',
      '/scim/mcp#frag',
    ];
    for (const path of spellings) {
      const before = stack.upstream.hits;
      const response = await send(stack.fx.gateway.plainUrl, path, {
        method: 'POST',
        headers: MCP_HEADERS,
        body,
      });
      // Served by the guarded proxy (401) or by no proxy at all (404/400): never forwarded.
      expect([400, 401, 404], `${path} → ${response.status}`).toContain(response.status);
      expect(stack.upstream.hits, path).toBe(before);
    }
  });

  it('serves the guarded proxy with its policy on the spellings that route to it', async () => {
    const token = await stack.km.sign({});
    for (const path of ['/scim/mcp', '/scim/mcp/', '/scim/mcp?x=1']) {
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
      const anonymous = await send(stack.fx.gateway.plainUrl, path, {
        method: 'POST',
        headers: MCP_HEADERS,
        body,
      });
      expect(anonymous.status, path).toBe(401);
      const authorized = await send(stack.fx.gateway.plainUrl, path, {
        method: 'POST',
        headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` },
        body,
      });
      expect(authorized.status, path).toBe(200);
    }
  });

  it('keeps the management API closed on every spelling of its routes', async () => {
    const spellings = [
      '/api/management/v1/mcp-proxies',
      '/api/management/v1/mcp-proxies/',
      '/api/management/v1/mcp-proxies/scim-v1.0',
      '/api/management/v1/mcp-proxies/scim-v1.0/',
      '/api/management/v1/%6dcp-proxies',
      '/api/management/v1/mcp-proxies%2Fscim-v1.0',
      '/api/management//v1/mcp-proxies',
      '/api/management/v1/./mcp-proxies',
      '/api/management/v1/x/../mcp-proxies',
      '/API/management/v1/mcp-proxies',
      '/metrics/../api/management/v1/mcp-proxies',
      '/api/management/v1/mcp-proxies?x=1',
    ];
    for (const path of spellings) {
      for (const method of ['GET', 'DELETE', 'PUT', 'POST']) {
        const response = await send(stack.fx.gateway.managementUrl, path, {
          method,
          headers: { 'content-type': 'application/json' },
          body: method === 'PUT' || method === 'POST' ? '{}' : undefined,
        });
        // 400 is a body refused on a path no route serves (DELETE on the collection).
        expect([400, 401, 404], `${method} ${path} → ${response.status}`).toContain(
          response.status,
        );
        expect(response.body).not.toContain('"spec"');
        expect(response.body).not.toContain('mcpProxies');
      }
    }
    const stillThere = await stack.fx.management('/api/management/v1/mcp-proxies/scim-v1.0');
    expect(stillThere.status).toBe(200);
  });
});

describe('management API login throttle', () => {
  it('counts each failed login before checking it: 30 concurrent guesses, only 10 evaluated', async () => {
    const fx = await startTestGateway({ dataDir: tempDir() });
    try {
      const guesses = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          fx.management('/api/management/v1/mcp-proxies', {
            headers: { authorization: basic('admin', `guess-${i}`) },
          }),
        ),
      );
      const statuses = guesses.map((r) => r.status);
      expect(statuses.filter((s) => s === 401)).toHaveLength(10);
      expect(statuses.filter((s) => s === 429)).toHaveLength(20);
      const limited = guesses.find((r) => r.status === 429) as Response;
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      // The right password waits for the window too: a guess that happens to be right is not
      // distinguishable from the others.
      const right = await fx.management('/api/management/v1/mcp-proxies');
      expect(right.status).toBe(429);
      fx.clock.advance(5 * 60_000 + 1_000);
      const later = await fx.management('/api/management/v1/mcp-proxies');
      expect(later.status).toBe(200);
      // A success gives its attempt back and is remembered: it never locks its user out.
      for (let i = 0; i < 15; i++) {
        expect((await fx.management('/api/management/v1/mcp-proxies')).status).toBe(200);
      }
      expect(ADMIN).toContain('Basic ');
    } finally {
      await fx.gateway.close();
    }
  });
});
